"""Failures reach Python as exceptions, on every live rank, and nobody hangs (mpirun -np 3):

  failure_test.py disagree   rank 0 uses another design than its peers: every rank's hook fails
                             in the collective agreement check, before any data moves
  failure_test.py silent     rank 1 builds its DDP model and then does nothing: the other ranks'
                             hook times out (3 s)

Each live rank prints "rank R: backward() raised ..." and the test (ctest) checks those lines.
After a transport failure the package leaves MPI unfinalised (MPI_Finalize could wait for a peer
that is gone), so mpirun ends the job and reports it: a non-zero exit is expected here."""
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cerar  # noqa: E402
import cerar.ddp  # noqa: E402
from mpi_harness import init_process_group_from_launcher  # noqa: E402

mode = sys.argv[1]
cerar.comm.mpi_world()
rank, n = init_process_group_from_launcher()
comm = cerar.mpi_communicator(timeout_s=3)
design = cerar.pick_design(n, 3 * n if mode == "disagree" and rank == 0 else 2 * n)
state = cerar.ddp.CerarHookState(comm, design, warmup_steps=0)
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 8))
model.register_comm_hook(state, cerar.ddp.cerar_hook)
if mode == "silent" and rank == 1:
    time.sleep(30)  # silent; mpirun ends the job once a failed peer exits
    sys.exit(0)
try:
    model(torch.randn(4, 8)).sum().backward()
    print("rank %d: backward() returned" % rank, flush=True)
except Exception as error:  # noqa: BLE001
    print("rank %d: backward() raised %s" % (rank, str(error).splitlines()[0]), flush=True)
    assert isinstance(state.last_error, cerar.TransportError), repr(state.last_error)
    try:
        comm.allreduce(torch.zeros(4))
    except cerar.TransportError as again:
        print("rank %d: then %s" % (rank, again), flush=True)
