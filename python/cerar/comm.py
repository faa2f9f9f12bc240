"""Communicators: the transport CERAR runs on, and in-place all-reduce on CPU tensors.

Two transports, one interface:
- mpi_communicator(): the library's MPI transport on MPI_COMM_WORLD. Launch with
  `mpirun -np N python3 train.py`. MPI is initialised here and finalised at exit.
- torch_communicator(group): send/recv through torch.distributed (gloo) on the job's process
  group, so `torchrun` launches work too (cerar.torch_transport).
"""
import atexit
import sys

from . import _cerar
from ._args import UINT64, flag, number, whole
from .designs import Design

_DTYPE_NAMES = {"torch.float32": "f32", "torch.float64": "f64", "float32": "f32",
                "float64": "f64"}

# Set when a transport failed or an exception is escaping to the top level: MPI_Finalize could
# then wait for peers that are stuck or gone, so the process exits without it and mpirun ends
# the job (its message names the process). A clean run finalises, and mpirun sees a clean exit.
_failed = False
# Arrays of failed all-reduces, kept alive for the rest of the process (see allreduce).
_abandoned = []


def _buffer(array):
    """(address, count, dtype) of a contiguous CPU float32/float64 torch tensor or numpy array;
    anything else raises cerar.InvalidArgument before any communication."""
    mod = type(array).__module__
    # By type, not by module name: a tensor subclass defined in user code (a Parameter subclass
    # in __main__) is a tensor. A program that has a tensor has imported torch.
    torch = sys.modules.get("torch")
    if (torch is not None and isinstance(array, torch.Tensor)) or mod.startswith("torch"):
        if torch is None or not isinstance(array, torch.Tensor):
            raise _cerar.InvalidArgument("all-reduce: %s, expected a torch tensor or numpy array"
                                         % type(array).__name__)
        if array.layout != torch.strided:
            # A sparse or mkldnn tensor has no one block of memory to reduce in place.
            raise _cerar.InvalidArgument("all-reduce: tensor layout %s, expected torch.strided"
                                         % array.layout)
        if array.device.type != "cpu":
            raise _cerar.InvalidArgument(
                "all-reduce: tensor on %s, expected a CPU tensor" % array.device)
        if not array.is_contiguous():
            raise _cerar.InvalidArgument("all-reduce: tensor is not contiguous")
        name = _DTYPE_NAMES.get(str(array.dtype))
        if name is None:
            raise _cerar.InvalidArgument(
                "all-reduce: tensor dtype %s, expected float32 or float64" % array.dtype)
        return array.data_ptr(), array.numel(), name
    if mod.startswith("numpy"):
        if not array.flags["C_CONTIGUOUS"] or not array.flags["WRITEABLE"]:
            raise _cerar.InvalidArgument("all-reduce: array is not contiguous and writable")
        name = _DTYPE_NAMES.get(str(array.dtype))
        if name is None:
            raise _cerar.InvalidArgument(
                "all-reduce: array dtype %s, expected float32 or float64" % array.dtype)
        return array.ctypes.data, array.size, name
    raise _cerar.InvalidArgument(
        "all-reduce: %s, expected a torch tensor or numpy array" % type(array).__name__)


def _flag(name, value):
    return flag(name, value, _cerar.InvalidArgument)


class Communicator:
    """One transport plus cached all-reduce objects (one per element count, evicted when two
    training steps in a row did not use them: see end_step)."""

    def __init__(self, native, kind):
        self._native = native
        self.kind = kind  # "mpi" | "torch"

    rank = property(lambda self: self._native.rank)
    size = property(lambda self: self._native.size)
    bytes_sent = property(lambda self: self._native.bytes_sent,
                          doc="bytes this rank has sent (all algorithms) since reset_counters")

    def allreduce(self, array, design=None, average=False, accumulation="buffer"):
        """In place: the coded all-reduce with `design` (a cerar.Design), or the exact ring
        without one; `average` divides by N. `accumulation` (coded only) is how a float32
        buffer is computed on: "buffer" (float32), "f64", "f64+feedback" or "f64-state" (float64
        arithmetic, state kept in float64; the same bytes sent, a smaller error: docs/runtime.md
        "Accumulation"). The GIL is released while it runs. Collective: every rank calls it
        with the same count, dtype, design and accumulation. When it raises, `array` holds
        partly reduced values."""
        address, count, dtype = _buffer(array)
        native_design = None
        if design is not None:
            if not isinstance(design, Design):
                raise _cerar.InvalidArgument("design: %r, expected a cerar.Design" % (design,))
            native_design = design._native
        self._refuse_after_finalize("all-reduce")
        try:
            self._native.allreduce(address, count, dtype, native_design, _flag("average", average),
                                   str(accumulation))
        except BaseException:
            # A TransportError, or Ctrl-C's KeyboardInterrupt ending a wait: either way the
            # communicator has failed (it names the failure), and its peers may be anywhere.
            if self._native.failure:
                global _failed
                _failed = True
                # The exact ring sends and receives in the array itself: a receive the failure
                # could not cancel may still land there, so the array is kept alive (never freed).
                _abandoned.append(array)
            raise
        return array

    def check_agreement(self, what, value):
        """Collective: raises cerar.TransportError on every rank unless all pass the same
        `value` (an int, 0 <= value < 2**64); `what` names it in the message."""
        value = whole("check_agreement value", value, _cerar.InvalidArgument, UINT64)
        self._refuse_after_finalize("check_agreement")
        try:
            self._native.check_agreement(str(what), value)
        except BaseException:
            # As in allreduce: a failed (or interrupted) check leaves its all-gather posted, so
            # MPI must not be finalised at exit.
            if self._native.failure:
                global _failed
                _failed = True
            raise

    def _refuse_after_finalize(self, what):
        if self.kind == "mpi" and _cerar._mpi_status()["finalized"]:
            # Any MPI call now would make Open MPI abort the whole job instead of raising.
            raise _cerar.TransportError("%s: MPI was finalised in this process (at interpreter "
                                        "exit, or by the program); the MPI communicator cannot "
                                        "be used after that" % what)

    def end_step(self):
        """Evicts the all-reduce objects that two end_steps in a row found unused (the DDP hook
        calls it after each step's last bucket). Two, not one: every hook state on the
        communicator calls it, so with two hooked models one's call would evict the other's
        objects, rebuilt (workspace, agreement checks) at its next step."""
        self._native.end_step()

    def cache_info(self):
        """The cached all-reduce objects: count, dtype, algorithm, accumulation,
        workspace_bytes, and serial (the communicator's count of objects built when it was
        built: a rebuilt object has a new serial)."""
        return self._native.cache_info()

    def cache_bytes(self):
        """Workspace bytes held by cached all-reduce objects."""
        return self._native.cache_bytes()

    def reset_counters(self):
        self._native.reset_counters()

    @property
    def failure(self):
        """The first transport failure ("" while usable); after one, every call raises."""
        return self._native.failure


def _finalize_mpi():
    if _failed:
        return
    _cerar._mpi_finalize()


def _excepthook(kind, value, tb):
    global _failed
    _failed = True
    _previous_excepthook(kind, value, tb)


_previous_excepthook = sys.excepthook
_mpi_registered = False


def _timeout(what, value):
    value = number("timeout_s", value, _cerar.InvalidArgument)
    if not value > 0:  # NaN too
        raise _cerar.InvalidArgument("%s: timeout_s = %r, expected seconds > 0 (inf: no limit)"
                                     % (what, value))
    return value


def _segment_bytes(value):
    value = whole("segment_bytes", value, _cerar.InvalidArgument, UINT64)
    if value < 1:
        raise _cerar.InvalidArgument("segment_bytes = %d, expected >= 1" % value)
    return value


def mpi_communicator(timeout_s=60.0, segment_bytes=1 << 20, check_every_call=False):
    """The library's MPI transport on (a duplicate of) MPI_COMM_WORLD. Initialises MPI
    (MPI_THREAD_SERIALIZED) if nobody has, and then finalises it at interpreter exit - unless
    the program is dying of an uncaught exception, when mpirun is left to end the job. MPI that
    someone else initialised below MPI_THREAD_SERIALIZED is refused (TransportError naming the
    level): the DDP hook calls MPI from backward()'s threads. "Uncaught" means seen by the
    sys.excepthook installed here: a hook installed later replaces it, and sys.exit(n) passes
    no hook, so both still finalise while peers may be mid-collective (they end at timeout_s;
    with timeout_s=inf it hangs): leave early with os._exit(n). A peer
    silent for timeout_s raises cerar.TransportError instead of hanging. SIGINT (Ctrl-C) ends a
    wait within about 0.1 s, also with timeout_s=inf: the call raises KeyboardInterrupt, and the
    communicator then refuses further work, as after a TransportError.

    All-reduce objects are cached per (count, dtype, op, design, accumulation), and building one
    checks that every rank makes the same call; a call that reuses a cached object does not
    check, like MPI and NCCL. check_every_call=True checks every call (one small all-gather
    each), like torch's TORCH_DISTRIBUTED_DEBUG=DETAIL: for debugging ranks that might pass
    different designs to the same call."""
    global _mpi_registered
    if not _cerar._with_mpi:
        raise _cerar.InvalidArgument("this cerar build has no MPI (CERAR_WITH_MPI=OFF)")
    _cerar._mpi_init()
    if not _mpi_registered:
        _mpi_registered = True
        sys.excepthook = _excepthook
        atexit.register(_finalize_mpi)
    timeout_s = _timeout("MPI communicator", timeout_s)
    return Communicator(_cerar._mpi_communicator(timeout_s, _segment_bytes(segment_bytes),
                                                 _flag("check_every_call", check_every_call)),
                        "mpi")


def mpi_world():
    """(rank, size) of MPI_COMM_WORLD, initialising MPI if needed; (None, None) without MPI."""
    if not _cerar._with_mpi:
        return None, None
    return tuple(_cerar._mpi_init())


def torch_communicator(group=None, timeout_s=60.0, segment_bytes=1 << 20,
                       check_every_call=False):
    """CERAR over torch.distributed: send/recv to the ring neighbours on a new gloo group with
    the same ranks as `group` (default: the world). torch.distributed must be initialised (as
    torchrun or init_process_group do). Collective over the whole job, as torch's new_group is:
    on a rank outside `group` it takes part and then raises cerar.InvalidArgument ("this rank
    ... is not a member of the group"). check_every_call: as mpi_communicator's.
    Ctrl-C takes effect only when torch's wait returns (at timeout_s at the latest):
    docs/training.md section 2."""
    from .torch_transport import TorchTransport
    timeout_s = _timeout("torch communicator", timeout_s)
    if timeout_s < 1e-3:
        # torch.distributed counts whole milliseconds: less is 0 ms, and the first wait fails.
        raise _cerar.InvalidArgument("torch communicator: timeout_s = %r, expected >= 0.001 s "
                                     "(torch.distributed's resolution)" % timeout_s)
    segment_bytes = _segment_bytes(segment_bytes)
    check_every_call = _flag("check_every_call", check_every_call)
    impl = TorchTransport(group, timeout_s)
    native = _cerar._python_communicator(impl, impl.rank, impl.size, segment_bytes,
                                          check_every_call)
    return Communicator(native, "torch")
