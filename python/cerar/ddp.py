"""A DistributedDataParallel communication hook that all-reduces gradient buckets with CERAR.

    state = CerarHookState(comm, design)
    ddp_model.register_comm_hook(state, cerar_hook)

CPU float32/float64 buckets only: the transports move host memory, and the runtime computes in
float32 or float64. A CUDA model, or a float16/bfloat16 one, fails at its first bucket with
cerar.InvalidArgument naming the device and dtype (keep the DDP model on the CPU in float32 or
float64; for CUDA, DDP's default all-reduce).

Like torch's PowerSGD hook (torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py) the
state object carries the options and the step counter, and tensors that gain nothing from the
approximate path (1-D ones: biases, norms) are all-reduced exactly; the hook returns a completed
torch.futures.Future holding the averaged bucket (divided by N). A failure - a transport error, a
peer that stopped - completes the future with that error, so DDP raises it in backward() as a
Python exception instead of the job aborting. (Through DDP's C++ reducer, torch 1.13 re-raises it
as a RuntimeError whose text starts with the original class and message, e.g. "TransportError:
rank 2: no data from rank 1 for 3 s"; the original exception object is state.last_error.)

Layout. CERAR cuts the all-reduced vector into c components of m elements; the error of element
j of a component is a linear combination of the elements j of the other components, the column
(PROTOCOL.md §1, §5). With layout="flat" (the bucket as DDP packs it) a column mixes unrelated
tensors, so a tensor with small gradients gets errors scaled by its neighbours' large ones, and
coordinates whose true average is exactly 0 come back non-zero. layout="tensor" cuts every tensor
into c pieces, one per component, so each column holds elements of one tensor only and each
tensor's error scales with its own gradients (a copy in and out; at most c - 1 padding elements
per tensor). docs/training.md measures both.

Exact zeros. A coordinate whose gradient is 0 on every rank (an embedding row no rank used, a dead
unit, a parameter that does not reach the loss) comes back non-zero from the coded path, by a
different amount on each rank - and Adam turns any persistent non-zero value into a full
learning-rate step, so such coordinates drift by up to lr per step. preserve_zeros=True restores
them exactly: the ranks first all-reduce (exactly) how many zero coordinates each coded tensor has,
and for the tensors where some rank has zeros, the number of ranks with a non-zero value at each
coordinate, packed as base-(N+1) digits into float64 words (floor(53 / log2(N + 1)) coordinates
per word, 22 at N = 4; digit sums never carry because they are at most N); decoded coordinates
with count 0 are set to 0. Every rank derives the same mask, so they agree exactly there.
"""
import hashlib

import torch

from . import _cerar
from .comm import Communicator
from ._args import flag, whole
from .designs import Design


# AllReduceOptions::accumulation by name (runtime/include/cerar/runtime/backend.h), and the error
# model's name for the arithmetic each gives a float32 run (docs/error-model.md), as the runtime
# maps them (ModelArithmetic).
ACCUMULATIONS = ("buffer", "f64", "f64+feedback", "f64-state")
ARITHMETIC = {a: _cerar._model_arithmetic("f32", a) for a in ACCUMULATIONS}


class CerarHookState:
    """Options and counters of cerar_hook.

    comm           a cerar.Communicator (mpi_communicator() or torch_communicator())
    design         a cerar.Design for comm.size ranks; None: the exact ring all-reduce (a baseline
                   that measures bytes on the same transport)
    c              instead of a design: the catalogue's best design for (comm.size, c) in the
                   arithmetic of `accumulation` (float32, or e.g. float32+state64 for f64-state),
                   or an eps design tuned for it when the catalogue has none; chosen for float32
                   here, and again for float64 at the first bucket if the gradients are float64
    warmup_steps   steps all-reduced exactly before the coded path starts (Adam's first steps
                   move every coordinate by about lr whatever its gradient, so ranks that
                   disagree on a tiny gradient's sign would part by 2 lr at once)
    exact_1d       all-reduce tensors with fewer than 2 dimensions exactly (biases, norms)
    min_coded_numel  tensors with fewer elements are all-reduced exactly too
    layout         "tensor" (each column holds one tensor) or "flat" (DDP's bucket as it is)
    preserve_zeros restore coordinates that are exactly 0 on every rank (see the module docstring)
    accumulation   how the coded all-reduce computes on float32 gradients: "buffer" (float32),
                   "f64", "f64+feedback" or "f64-state" (float64 arithmetic; with f64-state the
                   rank's encoded vectors and observations are kept in float64 too). The same
                   bytes are sent; the error is smaller, most with a design tuned for it (`c`
                   picks the catalogue's, matrices/OPTIMIZED-STATE64.md; or `cerar design --tune
                   float32+state64`, docs/optimizer.md §8b). The exact all-reduces (warm-up,
                   exact_1d, the zero mask) are unaffected.
    The defaults are the drift-control settings docs/training.md selects; pair them with a
    cerar.drift.DriftControl whose after_step() the training loop calls after optimizer.step().
    """

    def __init__(self, comm, design=None, *, c=None, warmup_steps=10, exact_1d=True,
                 min_coded_numel=0, layout="tensor", preserve_zeros=True, scale_rows=False,
                 accumulation="buffer"):
        if not isinstance(comm, Communicator):
            raise TypeError("comm: expected a cerar.Communicator, got %r" % (comm,))
        if accumulation not in ACCUMULATIONS:
            raise ValueError("accumulation %r, expected one of %s"
                             % (accumulation, ", ".join(ACCUMULATIONS)))
        warmup_steps = whole("warmup_steps", warmup_steps, ValueError)
        min_coded_numel = whole("min_coded_numel", min_coded_numel, ValueError, (0, 2**63 - 1,
                                                                                 "an element count"))
        exact_1d = flag("exact_1d", exact_1d, ValueError)
        preserve_zeros = flag("preserve_zeros", preserve_zeros, ValueError)
        scale_rows = flag("scale_rows", scale_rows, ValueError)
        if c is not None:
            c = whole("c", c, ValueError)
            if c < 1:
                raise ValueError("c = %d, expected >= 1" % c)
            if design is not None:
                raise ValueError("give a design or c, not both")
            design = _design_for(comm.size, c, accumulation)
        if design is not None and not isinstance(design, Design):
            raise TypeError("design: expected a cerar.Design or None, got %r" % (design,))
        if design is not None and design.N != comm.size:
            raise ValueError("design is for N = %d ranks, the communicator has %d"
                             % (design.N, comm.size))
        if layout not in ("tensor", "flat"):
            raise ValueError("layout %r, expected 'tensor' or 'flat'" % (layout,))
        if warmup_steps < 0:
            raise ValueError("warmup_steps = %d, expected >= 0" % warmup_steps)
        self.comm = comm
        self.design = design
        self.warmup_steps = warmup_steps
        self.exact_1d = bool(exact_1d)
        self.min_coded_numel = min_coded_numel
        self.layout = layout
        self.preserve_zeros = bool(preserve_zeros)
        self.scale_rows = bool(scale_rows)
        self.accumulation = accumulation
        self.iter = 0                 # completed steps (counted at each step's last bucket)
        self.last_error = None        # the exception of the latest failed bucket
        self.coded_elements = 0       # elements all-reduced by the coded path, all steps
        self.exact_elements = 0       # elements all-reduced exactly, all steps
        self._options_agreed = False  # checked across ranks at the first bucket
        self._chosen_for = "float32" if c is not None else None  # the dtype `c` chose for

    def __getstate__(self):
        # Like PowerSGDState (for checkpoints): the communicator is not serialisable and is left
        # out (set state.comm after loading); the design travels as its file text.
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("comm", "design", "last_error", "_options_agreed")}
        state["design_json"] = self.design._native.to_json() if self.design else None
        return state

    def __setstate__(self, state):
        from . import _cerar
        state = dict(state)
        text = state.pop("design_json")
        state.setdefault("accumulation", "buffer")  # checkpoints from before the option
        state.setdefault("_chosen_for", None)
        self.__dict__.update(state)
        self.design = Design(_cerar._parse_design(text, "checkpointed hook state")) if text else None
        self.comm = None
        self.last_error = None
        self._options_agreed = False

    def _coded_now(self):
        return self.design is not None and self.iter >= self.warmup_steps

    def _is_exact(self, tensor):
        return (self.exact_1d and tensor.dim() < 2) or tensor.numel() < self.min_coded_numel


def _design_for(n, c, accumulation="buffer", dtype="float32"):
    """The catalogue's best design for the arithmetic the hook will run (the error model's name
    for the accumulation on `dtype` gradients), or an eps design tuned for it when the catalogue
    has none for (n, c) and the build has the toolkit."""
    from .designs import make_design, pick_design
    arithmetic = (ARITHMETIC[accumulation] if dtype == "float32"
                  else _cerar._model_arithmetic("f64", accumulation))
    try:
        return pick_design(n, c, arithmetic)
    except _cerar.InvalidArgument:
        if not _cerar._with_toolkit:
            raise  # pick_design's reason, not make_design's "needs the toolkit"
        return make_design(n, c, arithmetic)


def _allreduce_tensor_layout(comm, design, tensors, accumulation="buffer"):
    """Coded all-reduce of `tensors` (views, updated in place) with each tensor spread over the
    c components, so every column holds elements of one tensor only: a staging matrix of c rows
    (the components) in which tensor t owns columns [col, col + w), w = ceil(n_t / c), and row k
    holds its elements [k w, (k + 1) w) (zero-padded at the end)."""
    c = design.c
    widths = [-(-t.numel() // c) for t in tensors]
    staging = torch.zeros(c, sum(widths), dtype=tensors[0].dtype)
    col = 0
    for t, w in zip(tensors, widths):
        padded = torch.zeros(c * w, dtype=t.dtype)
        padded[:t.numel()] = t.reshape(-1)
        staging[:, col:col + w] = padded.view(c, w)
        col += w
    comm.allreduce(staging, design, average=True, accumulation=accumulation)
    col = 0
    for t, w in zip(tensors, widths):
        t.view(-1).copy_(staging[:, col:col + w].reshape(-1)[:t.numel()])
        col += w


def _rows(tensor):
    """The tensor as a matrix of rows: its first dimension (a 1-D tensor is one row)."""
    return tensor.view(tensor.shape[0] if tensor.dim() >= 2 else 1, -1)


def _row_scales(comm, tensors):
    """Per tensor, a column of its rows' scales - the RMS of the row's elements over all ranks -
    identical on every rank: one exact all-reduce of every row's sum of squares, in float64 (in
    float32 a row with |g| above about 1e19 overflowed to inf, and its elements came back NaN).
    A row that is zero on every rank gets scale 1. Tensors without elements are left out: the
    caller skips them (their scale is None)."""
    rows = [_rows(t) if t.numel() else None for t in tensors]
    sums = torch.cat([r.double().pow(2).sum(dim=1) for r in rows if r is not None]
                     + [torch.zeros(0, dtype=torch.float64)])
    comm.allreduce(sums, None, average=False)
    scales, offset = [], 0
    for r in rows:
        if r is None:
            scales.append(None)
            continue
        part = sums[offset:offset + r.shape[0]]
        offset += r.shape[0]
        scale = (part / (comm.size * r.shape[1])).sqrt()
        scale[scale == 0] = 1.0
        scales.append(scale.to(r.dtype).unsqueeze(1))
    return scales


def _pack_digits(counts, base, per_word):
    """Integers 0 <= counts < base (int64, 1-D) as float64 words of `per_word` base-`base`
    digits (exact: every word is below 2^53)."""
    n = counts.numel()
    words = -(-n // per_word)
    padded = torch.zeros(words * per_word, dtype=torch.int64)
    padded[:n] = counts
    powers = base ** torch.arange(per_word, dtype=torch.int64)
    return (padded.view(words, per_word) * powers).sum(dim=1).to(torch.float64)


def _unpack_digits(words, base, per_word, n):
    value = words.to(torch.int64)
    digits = torch.empty(words.numel(), per_word, dtype=torch.int64)
    for k in range(per_word):
        digits[:, k] = value % base
        value = value // base
    return digits.reshape(-1)[:n]


def _nonzero_support(comm, tensors):
    """Per tensor: None when no rank has an exactly-zero coordinate, else a bool tensor that is
    True where at least one rank is non-zero. Two exact all-reduces (see the module docstring);
    identical on every rank. Collective."""
    zeros = torch.tensor([float((t == 0).sum()) for t in tensors], dtype=torch.float64)
    comm.allreduce(zeros, None, average=False)
    masked = [k for k in range(len(tensors)) if zeros[k] > 0]
    support = [None] * len(tensors)
    if not masked:
        return support
    base = comm.size + 1
    per_word = int(53 // torch.log2(torch.tensor(float(base))).item())
    while base ** per_word >= 2 ** 53:  # guard the float rounding of log2
        per_word -= 1
    nonzero = torch.cat([(tensors[k] != 0).reshape(-1).to(torch.int64) for k in masked])
    words = _pack_digits(nonzero, base, per_word)
    comm.allreduce(words, None, average=False)
    counts = _unpack_digits(words, base, per_word, nonzero.numel())
    offset = 0
    for k in masked:
        n = tensors[k].numel()
        support[k] = (counts[offset:offset + n] > 0).view_as(tensors[k])
        offset += n
    return support


def _allreduce_packed(comm, design, tensors, accumulation="buffer"):
    """All-reduce of `tensors` (views, updated in place) packed one after another."""
    packed = torch.cat([t.reshape(-1) for t in tensors])
    comm.allreduce(packed, design, average=True, accumulation=accumulation)
    offset = 0
    for t in tensors:
        t.view(-1).copy_(packed[offset:offset + t.numel()])
        offset += t.numel()


_AGREED_OPTIONS = ("layout", "exact_1d", "min_coded_numel", "preserve_zeros", "scale_rows",
                   "warmup_steps", "accumulation")


def _check_options_agree(state):
    """Every rank must run the hook with the same options and design: a rank with another
    layout lays the same element count out differently, and the all-reduce's own checks (count,
    dtype, design) pass while the gradients come out wrong. Collective, once per state."""
    mine = [(k, getattr(state, k)) for k in _AGREED_OPTIONS]
    mine.append(("design", state.design.fingerprint if state.design else 0))
    digest = hashlib.blake2b(repr(mine).encode(), digest_size=8).digest()
    state.comm.check_agreement(
        "DDP hook options and design (this rank: %s)" % ", ".join("%s=%r" % kv for kv in mine),
        int.from_bytes(digest, "little"))
    state._options_agreed = True


def allreduce_bucket(state, buffer, gradients):
    """All-reduces one bucket in place (averaged over ranks) following the state's options.
    `gradients` are the bucket's per-parameter views of `buffer`."""
    comm = state.comm
    if buffer.device.type != "cpu" or buffer.dtype not in (torch.float32, torch.float64):
        raise _cerar.InvalidArgument(
            "DDP hook: a bucket of %s on %s; the CERAR hook supports CPU float32/float64 "
            "buckets only: keep the DDP model on the CPU in float32 or float64 (for CUDA or "
            "float16/bfloat16 models, use DDP's default all-reduce)"
            % (str(buffer.dtype).replace("torch.", ""), buffer.device))
    if not getattr(state, "_options_agreed", False):
        dtype = "float64" if buffer.dtype == torch.float64 else "float32"
        if getattr(state, "_chosen_for", None) not in (None, dtype):
            # `c` chose for float32 gradients; these are float64 (every rank's, the same model).
            state.design = _design_for(comm.size, state.design.c, state.accumulation, dtype)
            state._chosen_for = dtype
        _check_options_agree(state)
    if not state._coded_now():
        comm.allreduce(buffer, None, average=True)
        state.exact_elements += buffer.numel()
        return
    exact = [g for g in gradients if state._is_exact(g)]
    coded = [g for g in gradients if not state._is_exact(g)]
    if not exact and state.layout == "flat" and not state.preserve_zeros:
        comm.allreduce(buffer, state.design, average=True,  # in place, no copy
                       accumulation=state.accumulation)
        state.coded_elements += buffer.numel()
        return
    if exact:
        _allreduce_packed(comm, None, exact)
        state.exact_elements += sum(g.numel() for g in exact)
    if coded:
        support = _nonzero_support(comm, coded) if state.preserve_zeros else [None] * len(coded)
        scales = _row_scales(comm, coded) if state.scale_rows else None
        if scales:
            for g, scale in zip(coded, scales):
                if scale is not None:
                    _rows(g).div_(scale)
        if state.layout == "tensor":
            _allreduce_tensor_layout(comm, state.design, coded, state.accumulation)
        else:
            _allreduce_packed(comm, state.design, coded, state.accumulation)
        if scales:
            for g, scale in zip(coded, scales):
                if scale is not None:
                    _rows(g).mul_(scale)
        for g, mask in zip(coded, support):
            if mask is not None:
                g.masked_fill_(~mask, 0)
        state.coded_elements += sum(g.numel() for g in coded)


def cerar_hook(state, bucket):
    """DDP communication hook: register with ddp_model.register_comm_hook(state, cerar_hook)."""
    future = torch.futures.Future()
    buffer = bucket.buffer()
    try:
        if state.comm is None:
            # A state restored from a checkpoint has no communicator (it cannot be pickled).
            raise ValueError("CerarHookState.comm is None: set state.comm to a communicator "
                             "after loading a checkpoint")
        allreduce_bucket(state, buffer, bucket.gradients())
        future.set_result(buffer)
    except Exception as error:  # noqa: BLE001 - every failure goes to DDP through the future
        state.last_error = error
        # A future whose callback raised carries the error in C++, where DDP's reducer finds it
        # (Future.set_exception of torch 1.13 stores the exception as the value instead).
        future.set_result(buffer)

        def fail(_):
            raise error
        future = future.then(fail)
    if bucket.is_last() and state.comm is not None:
        state.iter += 1
        # Objects of bucket sizes two steps in a row did not use (iteration 0's whole-model
        # bucket after DDP rebuilt its buckets) are freed here.
        state.comm.end_step()
    return future
