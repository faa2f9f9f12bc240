"""Training with CERAR, three ways with the same seeds: exact DDP (the library's exact ring on the
same transport, so bytes are measured alike), the CERAR hook without drift control, and with it.
Run by scripts/train; docs/training.md explains the methods and shows the results.

    mpirun -np 4 python3 python/train/train.py --out DIR [--quick] [options]
      (MASTER_PORT: a free port unless set; --help)
    torchrun --nproc_per_node 4 --redirects 1 --tee 1 python/train/train.py --transport torch
      --out DIR ...   (one command; --redirects/--tee 1: Debian's torchrun, docs/training.md §3)

Writes DIR/runs.csv (one row per evaluation: task, optimizer, method, c, seed, step, val_loss,
seconds, bytes_sent, max_replica_diff, ...) and DIR/summary.json; plot.py draws the PNG.

Methods: "exact", "cerar" (the whole bucket through CERAR, DDP's layout, no control) and
"cerar+<option>+...", options
    1d          1-D tensors (biases, norms) all-reduced exactly
    layout      each tensor spread over the c components (one tensor per column)
    zeros       coordinates that are 0 on every rank come back exactly 0
    rows        each row scaled by its RMS over ranks (agreed exactly) before the coded path
    resync<K>   parameters and optimiser state re-synchronised exactly every K steps
    probe<K>@<t> drift probe every K steps, re-synchronise when its peak drift estimate > t
    warmup<K>   exact all-reduce for the first K steps
and "control" = CONTROL below, the combination docs/training.md selects from measurements.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cerar  # noqa: E402
import cerar.ddp  # noqa: E402
import cerar.drift  # noqa: E402
from tasks import TASKS  # noqa: E402

CONTROL = "cerar+1d+layout+zeros+warmup10+probe10@0.005"

COLUMNS = ["task", "optimizer", "method", "c", "seed", "step", "val_loss", "seconds",
           "bytes_sent", "max_replica_diff", "max_replica_diff_rel", "probe_peak", "resyncs",
           "probes", "train_loss"]


def parse_method(method):
    """{"design": bool, "exact_1d", "layout", "resync_every", "probe_every", "threshold",
    "warmup"} from a method string (see the module docstring)."""
    if method == "control":
        method = CONTROL
    parts = method.split("+")
    spec = {"design": parts[0] == "cerar", "exact_1d": False, "layout": "flat",
            "resync_every": None, "probe_every": None, "threshold": None, "warmup": 0,
            "zeros": False, "rows": False}
    if parts[0] not in ("exact", "cerar") or (parts[0] == "exact" and len(parts) > 1):
        raise ValueError("method %r: expected exact, cerar[+option...] or control" % method)
    for opt in parts[1:]:
        if opt == "1d":
            spec["exact_1d"] = True
        elif opt == "layout":
            spec["layout"] = "tensor"
        elif opt == "zeros":
            spec["zeros"] = True
        elif opt == "rows":
            spec["rows"] = True
        elif opt.startswith("resync"):
            spec["resync_every"] = int(opt[6:])
        elif opt.startswith("probe"):
            every, threshold = opt[5:].split("@")
            spec["probe_every"], spec["threshold"] = int(every), float(threshold)
        elif opt.startswith("warmup"):
            spec["warmup"] = int(opt[6:])
        else:
            raise ValueError("method %r: unknown option %r" % (method, opt))
    return spec


def free_port(comm):
    """A TCP port that was free on rank 0's host, the same on every rank: rank 0 asks the
    kernel for one (bind to port 0) and sends it to the others with an exact all-reduce (the
    others add 0). Collective. The port is released before torch.distributed's store binds it,
    as in scripts/train: another program could take it in between, but two runs never get the
    same fixed port."""
    import socket
    port = 0
    if comm.rank == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
    t = torch.tensor([float(port)], dtype=torch.float64)
    comm.allreduce(t)
    comm.end_step()
    comm.end_step()  # evict the one-element all-reduce object: training never reuses it
    return int(t.item())


def setup(transport):
    """torch.distributed (gloo) for DDP itself, and the CERAR communicator. With the MPI
    transport the rendezvous is MASTER_ADDR:MASTER_PORT, by default 127.0.0.1 and a free port
    that rank 0 picks (free_port); the user's values when set. torchrun sets its own."""
    if transport == "mpi":
        rank, size = cerar.comm.mpi_world()
        comm = cerar.mpi_communicator(timeout_s=120)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        if not os.environ.get("MASTER_PORT"):
            os.environ["MASTER_PORT"] = str(free_port(comm))
        dist.init_process_group("gloo", rank=rank, world_size=size)
    else:
        dist.init_process_group("gloo")
        comm = cerar.torch_communicator(timeout_s=120)
    return comm


def max_over_ranks(value):
    t = torch.tensor([float(value)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def run(task, method, c, seed, steps, eval_every, drift_every, comm, rows, report_drift=False,
        accumulation="buffer"):
    n = comm.size
    spec = parse_method(method)
    torch.manual_seed(seed)
    model = task.model()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    arithmetic = cerar.ddp.ARITHMETIC[accumulation]  # the catalogue's design for it
    design = cerar.pick_design(n, c * n, arithmetic) if spec["design"] else None
    optimizer = task.optimizer(ddp.parameters())
    control = None
    if spec["resync_every"] or spec["probe_every"]:
        control = cerar.drift.DriftControl(comm, model, optimizer,
                                           probe_every=spec["probe_every"],
                                           resync_every=spec["resync_every"],
                                           resync_above=spec["threshold"],
                                           start_after=spec["warmup"])
    state = cerar.ddp.CerarHookState(comm, design, warmup_steps=spec["warmup"],
                                     exact_1d=spec["exact_1d"], layout=spec["layout"],
                                     preserve_zeros=spec["zeros"], scale_rows=spec["rows"],
                                     accumulation=accumulation)
    ddp.register_comm_hook(state, cerar.ddp.cerar_hook)
    batches = task.batches(seed, comm.rank)
    comm.reset_counters()
    seconds = 0.0
    c_label = c * n if design is not None else 0
    worst = (0.0, 0.0)  # the largest replica diff since the last row, measured every drift_every
    for step in range(1, steps + 1):
        start = time.perf_counter()
        loss = task.loss(ddp, next(batches))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if control is not None:
            control.after_step()
        seconds += time.perf_counter() - start
        evaluate = step % eval_every == 0 or step == steps
        if evaluate or step % drift_every == 0:
            worst = max(worst, cerar.drift.replica_diff(model))
        if evaluate:
            (diff, rel), worst = worst, (0.0, 0.0)
            probe = control.history[-1][1].peak if control and control.history else ""
            row = {"task": task.name, "optimizer": task.optimizer_name, "method": method,
                   "c": c_label, "seed": seed, "step": step, "val_loss": task.val_loss(model),
                   "seconds": max_over_ranks(seconds), "bytes_sent": max_over_ranks(comm.bytes_sent),
                   "max_replica_diff": diff, "max_replica_diff_rel": rel,
                   "probe_peak": probe, "resyncs": control.resyncs if control else 0,
                   "probes": control.probes if control else 0, "train_loss": float(loss)}
            rows.append(row)
            if comm.rank == 0:
                print("%-7s %-34s c=%-3d seed %d step %4d  val %.4f  diff %.2e  %.0f B/step  %.1fs"
                      % (task.name, method, c_label, seed, step, row["val_loss"], diff,
                         row["bytes_sent"] / step, row["seconds"]), flush=True)
    if report_drift:
        print_drift_report(model, comm.rank)
    # The cache holds this run's bucket sizes only (DDP's iteration-0 bucket was evicted).
    return comm.cache_bytes()


def print_drift_report(model, rank):
    """Diagnostic: the tensors where the replicas differ most (exact, via torch.distributed)."""
    lines = []
    for name, p in model.named_parameters():
        hi, lo = p.detach().clone(), p.detach().clone()
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        dist.all_reduce(lo, op=dist.ReduceOp.MIN)
        d = (hi - lo).reshape(-1)
        lines.append((float(d.max()), name, float((d > 1e-3).float().mean()), p.numel()))
    if rank == 0:
        for worst, name, frac, n in sorted(lines, reverse=True)[:8]:
            print("    drift %-45s max %.2e, %5.1f %% of %d coordinates > 1e-3"
                  % (name, worst, 100 * frac, n), flush=True)


def summarise(rows):
    """Per (task, method, c): final val loss over seeds, worst drift, bytes per step against the
    exact ring's."""
    final = {}
    for r in rows:
        key = (r["task"], r["optimizer"], r["method"], r["c"], r["seed"])
        if key not in final or r["step"] > final[key]["step"]:
            final[key] = r
    groups = {}
    for (task, opt, method, c, seed), r in final.items():
        groups.setdefault((task, opt, method, c), []).append(r)
    worst_diff = {}
    for r in rows:
        key = (r["task"], r["optimizer"], r["method"], r["c"])
        worst_diff[key] = max(worst_diff.get(key, 0.0), r["max_replica_diff"])
    out = []
    for key, rs in sorted(groups.items()):
        task, opt, method, c = key
        losses = [r["val_loss"] for r in rs]
        mean = sum(losses) / len(losses)
        std = (sum((x - mean) ** 2 for x in losses) / max(len(losses) - 1, 1)) ** 0.5
        out.append({"task": task, "optimizer": opt, "method": method, "c": c,
                    "seeds": sorted(r["seed"] for r in rs), "val_loss_mean": mean,
                    "val_loss_std": std, "val_loss_min": min(losses), "val_loss_max": max(losses),
                    "max_replica_diff": worst_diff[key],
                    "final_max_replica_diff": max(r["max_replica_diff"] for r in rs),
                    "bytes_per_step": sum(r["bytes_sent"] / r["step"] for r in rs) / len(rs),
                    "seconds": sum(r["seconds"] for r in rs) / len(rs),
                    "resyncs": sum(r["resyncs"] for r in rs) / len(rs),
                    "probes": sum(r["probes"] for r in rs) / len(rs)})
    exact = {(s["task"]): s for s in out if s["method"] == "exact"}
    for s in out:
        ref = exact.get(s["task"])
        s["bytes_vs_ring"] = s["bytes_per_step"] / ref["bytes_per_step"] if ref else None
    return out


def write_atomically(path, text):
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="With --transport mpi, torch.distributed meets at MASTER_ADDR:MASTER_PORT: "
               "127.0.0.1 and a port that was free on rank 0's host unless these are set, so "
               "that two runs at once do not collide (ranks on several hosts: set MASTER_ADDR to "
               "rank 0's). torchrun sets its own.")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true",
                    help="2 seeds, 120 steps, c = 2N only (under 3 minutes on 2 cores)")
    ap.add_argument("--tasks", default="mlp,charlm")
    ap.add_argument("--methods", default="exact,cerar,control")
    ap.add_argument("--c", default="2,3", help="c as multiples of N, comma-separated")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--drift-every", type=int, default=1,
                    help="measure the exact replica diff every K steps; a row reports the "
                         "largest since the previous row")
    ap.add_argument("--accumulation", default="buffer", choices=cerar.ddp.ACCUMULATIONS,
                    help="how the coded all-reduce computes on the float32 gradients (docs/"
                         "training.md); designs are the catalogue's best for that arithmetic")
    ap.add_argument("--drift-report", action="store_true",
                    help="print the tensors that drift most at the end of each run")
    ap.add_argument("--transport", choices=["mpi", "torch"],
                    default="mpi" if "OMPI_COMM_WORLD_SIZE" in os.environ or
                    "PMI_SIZE" in os.environ else "torch")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.steps, args.c, args.eval_every = 2, 120, "2", 20
    if args.drift_every < 1 or args.eval_every < 1:
        ap.error("--drift-every and --eval-every: expected >= 1")
    torch.set_num_threads(1)
    methods = args.methods.split(",")
    for m in methods:
        parse_method(m)  # reject a typo before anything runs
    comm = setup(args.transport)
    if comm.rank == 0:
        os.makedirs(args.out, exist_ok=True)
        print("cerar train: N = %d ranks, %s transport, tasks %s, methods %s, c = %s x N, "
              "%d seeds, %d steps" % (comm.size, comm.kind, args.tasks, args.methods, args.c,
                                      args.seeds, args.steps), flush=True)
        if comm.kind == "mpi":
            print("cerar train: torch.distributed rendezvous at %s:%s"
                  % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]), flush=True)
    rows = []
    started = time.time()
    for name in args.tasks.split(","):
        task = TASKS[name]()
        for seed in range(1, args.seeds + 1):
            for method in methods:
                for c in ([0] if method == "exact" else [int(x) for x in args.c.split(",")]):
                    run(task, method, c, seed, args.steps, args.eval_every,
                        args.drift_every, comm, rows, args.drift_report, args.accumulation)
    if comm.rank == 0:
        lines = [",".join(COLUMNS)]
        for r in rows:
            lines.append(",".join(str(r[k]) for k in COLUMNS))
        write_atomically(os.path.join(args.out, "runs.csv"), "\n".join(lines) + "\n")
        summary = {"N": comm.size, "transport": comm.kind, "control": CONTROL,
                   "args": vars(args), "wall_seconds": time.time() - started,
                   "results": summarise(rows)}
        write_atomically(os.path.join(args.out, "summary.json"), json.dumps(summary, indent=1))
        print("cerar train: %.0f s; results in %s" % (time.time() - started, args.out), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
