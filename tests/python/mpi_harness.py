"""A small multi-rank test runner for scripts launched by mpirun or torchrun: runs every
test_* function on every rank, gathers pass/fail over ranks (torch.distributed), prints one line
per test and exits 1 if any rank failed any test."""
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist


def init_process_group_from_launcher():
    """gloo for DDP: from torchrun's environment, or mpirun's (OMPI_COMM_WORLD_*)."""
    if "RANK" not in os.environ and "OMPI_COMM_WORLD_RANK" in os.environ:
        os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
        os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", os.environ.get("CERAR_TEST_PORT", "29611"))
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size()


def run_tests(namespace, only=None):
    torch.set_num_threads(1)
    tests = sorted((k, v) for k, v in namespace.items() if k.startswith("test_") and callable(v))
    if only:
        tests = [(k, v) for k, v in tests if k in only]
    failed_any = False
    for name, fn in tests:
        start = time.time()
        error = ""
        try:
            fn()
        except Exception:  # noqa: BLE001
            error = traceback.format_exc()
        flag = torch.tensor([1.0 if error else 0.0])
        dist.all_reduce(flag)
        if error:
            print("[rank %d] %s FAILED:\n%s" % (dist.get_rank(), name, error), flush=True)
        dist.barrier()
        if dist.get_rank() == 0:
            print("%-55s %s (%.1f s)" % (name, "FAILED on %d rank(s)" % flag.item() if flag.item()
                                         else "ok", time.time() - start), flush=True)
        failed_any = failed_any or flag.item() > 0
    dist.barrier()
    dist.destroy_process_group()
    return 1 if failed_any else 0


def main(namespace):
    sys.exit(run_tests(namespace, sys.argv[1:]))
