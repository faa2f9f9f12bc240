"""CERAR for Python: designs, an in-place coded all-reduce, and a DDP communication hook.

    import cerar
    design = cerar.pick_design(N=4, c=8, dtype="float32")      # from the catalogue
    comm = cerar.mpi_communicator()                             # mpirun -np 4 python3 train.py
    # or: comm = cerar.torch_communicator()                     # torchrun: the job's process group
    state = cerar.ddp.CerarHookState(comm, design)
    ddp_model.register_comm_hook(state, cerar.ddp.cerar_hook)

docs/training.md has the whole story: launchers, the hook's options, replica drift and its
control (cerar.drift).
"""
from ._cerar import (  # noqa: F401  (the exception classes are part of the API)
    DesignError,
    DeviceError,
    Error,
    InvalidArgument,
    IoError,
    NumericalError,
    TransportError,
)
from .designs import Design, catalogue, load_design, make_design, pick_design  # noqa: F401
from .comm import Communicator, mpi_communicator, mpi_world, torch_communicator  # noqa: F401

__all__ = [
    "Design", "catalogue", "load_design", "make_design", "pick_design",
    "Communicator", "mpi_communicator", "mpi_world", "torch_communicator",
    "Error", "InvalidArgument", "DesignError", "IoError", "NumericalError", "TransportError",
    "DeviceError",
]
