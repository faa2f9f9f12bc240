"""Two MPI scenarios (mpirun -np 2), one per run, each printing "<scenario> rank R: ..." lines that
recovery_check.sh checks:

  late       rank 1 is 4 s late for an all-reduce with a 2 s timeout: both ranks get a
             TransportError, drop the communicator, and make a new one that works. The failed
             run's receives were still posted into the dropped communicator's buffers, and a late
             message then landed in freed memory (a segfault in the new communicator's first call).
  finalized  after MPI_Finalize, check_agreement raises TransportError, as allreduce does (it
             called MPI and Open MPI aborted the whole job).
"""
import gc
import os
import sys
import time

import numpy as np

import cerar
from cerar import _cerar

scenario = sys.argv[1]
rank, size = cerar.comm.mpi_world()


def say(text):
    os.write(1, ("%s rank %d: %s\n" % (scenario, rank, text)).encode())


if scenario == "late":
    n = 1 << 20
    # Start together (Python's start-up differs by seconds under load): the good call below has
    # only the 2 s timeout.
    start = cerar.mpi_communicator(timeout_s=60)
    start.allreduce(np.ones(1, np.float32))
    del start
    comm = cerar.mpi_communicator(timeout_s=2)
    comm.allreduce(np.ones(n, np.float32))  # the ring object is now cached, its buffers posted to
    if rank == 1:
        time.sleep(4)
    try:
        comm.allreduce(np.ones(n, np.float32))
        say("no error")
    except cerar.TransportError as error:
        say("raised TransportError")
    del comm
    gc.collect()
    # Memory the dropped buffers' pages may go to, and a new communicator's traffic.
    junk = [np.full(n // 2, 7.0, np.float32) for _ in range(8)]
    comm = cerar.mpi_communicator(timeout_s=20)
    sums = [float(comm.allreduce(np.ones(16, np.float32))[0]) for _ in range(3)]
    time.sleep(1)
    say("recovered: sums %s, other memory intact %s"
        % (sums, all(bool((j == 7.0).all()) for j in junk)))
elif scenario == "finalized":
    comm = cerar.mpi_communicator(timeout_s=20)
    comm.allreduce(np.ones(4, np.float32))
    _cerar._mpi_finalize()
    try:
        comm.check_agreement("after finalize", 1)
        say("check_agreement returned")
    except cerar.TransportError as error:
        say("check_agreement raised TransportError: %s" % error)
