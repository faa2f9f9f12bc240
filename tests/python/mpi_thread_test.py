"""MPI initialised before cerar, by someone else, at MPI_THREAD_SINGLE (as mpi4py with
rc.thread_level = "single" does): mpi_communicator() must refuse, naming the level, instead of
letting the DDP hook call MPI from other threads. Run by ctest under mpirun -np 1
(tests/python/CMakeLists.txt); exits 0 when the refusal is right."""
import ctypes
import ctypes.util
import sys

import cerar
from cerar import _cerar

# The library cerar's extension is linked with (one copy per process: the same MPI state).
mpi = ctypes.CDLL(ctypes.util.find_library("mpi"), mode=ctypes.RTLD_GLOBAL)
assert mpi.MPI_Init(None, None) == 0
try:
    cerar.mpi_communicator()
except cerar.TransportError as e:
    text = str(e)
    ok = ("thread level MPI_THREAD_SINGLE (0); the MPI communicator needs MPI_THREAD_SERIALIZED"
          in text)
    print("refused: %s" % text, flush=True)
else:
    ok = False
    print("mpi_communicator() accepted MPI at MPI_THREAD_SINGLE", flush=True)
assert not _cerar._mpi_status()["owned"]
mpi.MPI_Finalize()  # ours to finalise: cerar did not initialise it
sys.exit(0 if ok else 1)
