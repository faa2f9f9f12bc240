"""Three MPI scenarios (mpirun -np 2), one per run, each printing "<scenario> rank R: ..." lines
that recovery_check.sh checks:

  late       rank 1 is 4 s late for an all-reduce with a 2 s timeout: both ranks get a
             TransportError, drop the communicator, and make a new one that works. The failed
             run's receives were still posted into the dropped communicator's buffers, and a late
             message then landed in freed memory (a segfault in the new communicator's first call).
  finalized  after MPI_Finalize, check_agreement raises TransportError, as allreduce does (it
             called MPI and Open MPI aborted the whole job).
  interrupt  Ctrl-C ends a wait: rank 1 never joins two of rank 0's waits, which have no timeout
             (timeout_s=inf): an all-reduce whose object is cached (a wait for an exchange) and a
             check_agreement (a wait for an all-gather). For each, a timer thread sends rank 0
             SIGINT after 1 s; rank 0 must raise KeyboardInterrupt within 10 s of it, and then
             its communicator refuses further work, naming the interruption. Both ranks then
             all-reduce on a new communicator. Without the MPI transport's interrupt check, rank
             0 waited forever (Python runs the signal's handler only when the wait returns):
             faulthandler ends each rank after 60 s, so the job ends and the check fails.
"""
import faulthandler
import gc
import os
import signal
import sys
import threading
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
elif scenario == "interrupt":
    faulthandler.dump_traceback_later(60, exit=True)

    def interrupted(what, call):
        """Runs call() with SIGINT 1 s later; says what it raised and how soon."""
        sent = []

        def send():
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

        timer = threading.Timer(1.0, send)
        timer.start()
        try:
            call()
            say("%s returned" % what)
        except KeyboardInterrupt:
            late = time.monotonic() - sent[0]
            say("%s raised KeyboardInterrupt %s 10 s of SIGINT (%.2f s)"
                % (what, "within" if late < 10 else "not within", late))
        except Exception as error:  # noqa: BLE001
            say("%s raised %s: %s" % (what, type(error).__name__, error))
        timer.join()
        try:
            call()
            say("then %s returned" % what)
        except cerar.TransportError as error:
            say("then %s" % error)

    # Start together (Python's start-up differs by seconds under load).
    cerar.mpi_communicator(timeout_s=60).allreduce(np.ones(1, np.float32))
    comm = cerar.mpi_communicator(timeout_s=float("inf"))
    comm.allreduce(np.ones(16, np.float32))  # builds (and checks) the ring object on both ranks
    if rank == 0:
        interrupted("allreduce", lambda: comm.allreduce(np.ones(16, np.float32)))
    checked = cerar.mpi_communicator(timeout_s=float("inf"))  # collective: rank 1 waits here
    if rank == 0:
        interrupted("check_agreement", lambda: checked.check_agreement("interrupt test", 1))
    fresh = cerar.mpi_communicator(timeout_s=60)
    sums = [float(fresh.allreduce(np.ones(4, np.float32))[0]) for _ in range(3)]
    say("recovered: sums %s" % sums)
    faulthandler.cancel_dump_traceback_later()
