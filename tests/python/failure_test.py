"""Failures reach Python as exceptions, on every live rank, and nobody hangs (mpirun -np 3),
two scenarios in one job:

  disagree   rank 0 uses another design than its peers: every rank's hook fails in the
             collective check of the hook's options and design, before any data moves
  silent     then, on a new communicator, rank 1 builds its DDP model and does nothing: the other
             ranks' hook times out (3 s)

Each live rank prints "<scenario> rank R: backward() raised ..." and then what a further call on
the failed communicator says; failure_check.sh checks those lines. After a transport failure the
package leaves MPI unfinalised (MPI_Finalize could wait for a peer that is gone), so mpirun ends
the job and reports it: a non-zero exit is expected here."""
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cerar  # noqa: E402
import cerar.ddp  # noqa: E402
from mpi_harness import init_process_group_from_launcher  # noqa: E402

cerar.comm.mpi_world()
rank, n = init_process_group_from_launcher()


def say(text):
    # One write per line: with PYTHONUNBUFFERED, print() writes the text and its newline
    # separately, and mpirun may put another rank's line between the two.
    os.write(1, (text + "\n").encode())


def scenario(name, c, silent_rank=None, timeout_s=3):
    comm = cerar.mpi_communicator(timeout_s=timeout_s)
    state = cerar.ddp.CerarHookState(comm, cerar.pick_design(n, c), warmup_steps=0)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 8))
    model.register_comm_hook(state, cerar.ddp.cerar_hook)
    if rank == silent_rank:
        time.sleep(30)  # silent; mpirun ends the job once a failed peer exits
        sys.exit(0)
    try:
        model(torch.randn(4, 8)).sum().backward()
        say("%s rank %d: backward() returned" % (name, rank))
    except Exception as error:  # noqa: BLE001
        say("%s rank %d: backward() raised %s" % (name, rank, str(error).splitlines()[0]))
        assert isinstance(state.last_error, cerar.TransportError), repr(state.last_error)
        try:
            comm.allreduce(torch.zeros(4))
        except cerar.TransportError as again:
            say("%s rank %d: then %s" % (name, rank, again))


# 30 s: under a loaded machine (ctest -j2) a rank can reach the check more than 3 s after
# another, which then reports a timeout instead of the disagreement this scenario checks.
scenario("disagree", 3 * n if rank == 0 else 2 * n, timeout_s=30)
scenario("silent", 2 * n, silent_rank=1)
