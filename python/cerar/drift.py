"""Replica drift: measure it cheaply, bound it by re-synchronising.

With an approximate all-reduce every rank decodes a slightly different sum, so the replicas'
parameters drift apart. Adam makes it worse: its per-coordinate normalisation turns a tiny
difference in a near-zero gradient into a full learning-rate step (docs/training.md measures it).

Probe. `probe()` measures how far each rank's parameters are from the ranks' mean with a
CountSketch: every coordinate of a tensor is hashed (the same hash on every rank) to one of K
buckets with a random sign, and two exact all-reduces follow - of the sketches (giving the mean
sketch), then of each rank's distance from it, in its own slot. Per tensor this gives
  rms:  sqrt(||s_i - mean s||^2 / n), an unbiased estimate of the RMS of p_i - mean p (relative
        spread about sqrt(2/K));
  peak: max_k |s_ik - mean s_k|, which is the largest |p_ij - mean p_j| when the drift sits in a
        few coordinates (each then dominates its bucket: the "heavy hitters" of a CountSketch) -
        the case that matters, since drift concentrates where gradients are near zero; the other
        coordinates of a bucket add their (small) drift with random signs.
Tensors with at most K elements get one bucket per coordinate and are measured exactly. Both
figures take the largest over ranks i. Cost: (T K + 2 N T) float64 through the exact ring for T
tensors, against the model's P elements per step. Memory: the hash and sign are drawn once (the
same values on every rank, from a fixed seed) and kept as 1 byte each per parameter element (K <=
256; 2 bytes of hash up to K = 32768); a probe works through each tensor in chunks of _CHUNK
elements, so its scratch is about 25 bytes x _CHUNK plus 8 bytes x the largest tensor (its RMS).

Control. `resync()` replaces every rank's parameters - and the optimiser's per-parameter state
(Adam's moments, SGD's momentum) - by their exact average over ranks. DriftControl calls it every
`resync_every` steps and/or before the probe's peak (the estimated largest |p_i - mean p|) passes
`resync_above`, probing at gaps that adapt to how fast the drift grows.

`replica_diff()` is the diagnostic used by the tests and scripts/train: the exact largest
difference between any two ranks' parameters, by torch.distributed all-reduce (MAX and MIN) on the
job's process group. It costs two full all-reduces and is not part of the method.
"""
import math

import torch

from . import _cerar
from ._args import number, whole

_MAX_BUCKETS = 64
_CHUNK = 1 << 20  # elements sketched at a time (the probe's scratch is about 25 B per element)


class DriftEstimate:
    """What one probe saw, per tensor (largest over ranks i): per_tensor, the RMS over the
    tensor's coordinates of p_i - mean p; relative, that over the tensor's RMS value; peaks, the
    estimated largest |p_i - mean p|. rms and peak: the same over the whole model."""

    def __init__(self, names, per_tensor, relative, peaks, rms):
        self.names = names
        self.per_tensor = per_tensor
        self.relative = relative
        self.peaks = peaks
        self.rms = rms

    @property
    def peak(self):
        return max(self.peaks) if self.peaks else 0.0

    @property
    def worst_relative(self):
        return max(self.relative) if self.relative else 0.0

    @property
    def worst_tensor(self):
        if not self.relative:
            return None
        return self.names[max(range(len(self.relative)), key=self.relative.__getitem__)]

    def __repr__(self):
        return "<DriftEstimate rms=%.3g peak=%.3g, worst relative rms %.3g in %s>" % (
            self.rms, self.peak, self.worst_relative, self.worst_tensor)


def _named_parameters(module_or_params, what="parameters"):
    """[(name, tensor)] of a module (its trainable parameters), or of an iterable of tensors
    (named param0, param1, ...) or of (name, tensor) pairs such as named_parameters() gives.
    Enumerates the iterable once: keep the list, since an iterator (model.parameters()) is empty
    the second time. An empty result raises ValueError naming `what`."""
    if hasattr(module_or_params, "named_parameters"):
        named = [(n, p) for n, p in module_or_params.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("%s: the module has no trainable parameters" % what)
        return named
    named = [tuple(x) if isinstance(x, tuple) else ("param%d" % k, x)
             for k, x in enumerate(module_or_params)]
    if not named:
        raise ValueError("%s: no parameters (%r is empty%s)" % (
            what, module_or_params, "; an iterator such as model.parameters() is empty once "
            "consumed: pass the module or a list" if iter(module_or_params) is module_or_params
            else ""))
    return named


def _index_dtype(buckets):
    """The smallest integer dtype that holds bucket numbers 0 ... buckets - 1."""
    for dtype, top in ((torch.uint8, 1 << 8), (torch.int16, 1 << 15), (torch.int32, 1 << 31)):
        if buckets <= top:
            return dtype
    return torch.int64


class DriftProbe:
    """CountSketch drift probe over a fixed list of parameters (see the module docstring)."""

    def __init__(self, comm, parameters, buckets=_MAX_BUCKETS, seed=0x5EED):
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
            raise ValueError("DriftProbe: buckets = %r, expected an integer >= 1" % (buckets,))
        self.comm = comm
        self.named = _named_parameters(parameters, "DriftProbe")
        gen = torch.Generator().manual_seed(seed)
        # The same draws as ever (int64 hash, sign from a second draw, tensor by tensor), kept
        # in 1-byte types: the sketch values are bitwise those of the float64/int64 version.
        index = _index_dtype(buckets)
        self._hash, self._sign, self._k = [], [], []
        for _, p in self.named:
            n = p.numel()
            if n <= buckets:  # exact: one bucket per coordinate
                h = torch.arange(n).to(index)
                s = torch.ones(n, dtype=torch.int8)
                k = n
            else:
                h = torch.randint(0, buckets, (n,), generator=gen).to(index)
                s = (torch.randint(0, 2, (n,), generator=gen) * 2 - 1).to(torch.int8)
                k = buckets
            self._hash.append(h)
            self._sign.append(s)
            self._k.append(k)
        self._offsets = [0]
        for k in self._k:
            self._offsets.append(self._offsets[-1] + k)

    def probe(self):
        comm, n_ranks, rank = self.comm, self.comm.size, self.comm.rank
        sketch = torch.zeros(self._offsets[-1], dtype=torch.float64)
        with torch.no_grad():
            for t, (_, p) in enumerate(self.named):
                part = sketch[self._offsets[t]:self._offsets[t + 1]]
                flat, h, s = p.detach().reshape(-1), self._hash[t], self._sign[t]
                # In order, chunk by chunk: every bucket adds its elements in the same order as
                # one index_add_ over the whole tensor would.
                for a in range(0, flat.numel(), _CHUNK):
                    b = a + _CHUNK
                    part.index_add_(0, h[a:b].long(), flat[a:b].double() * s[a:b])
        mean = sketch.clone()
        comm.allreduce(mean, None, average=True)
        dev = sketch - mean
        n_tensors = len(self.named)
        slots = torch.zeros(2, n_ranks, n_tensors, dtype=torch.float64)
        for t in range(n_tensors):
            part = dev[self._offsets[t]:self._offsets[t + 1]]
            slots[0, rank, t] = part.pow(2).sum()
            slots[1, rank, t] = part.abs().max() if part.numel() else 0.0
        comm.allreduce(slots, None, average=False)  # each rank's row, exactly (others add 0)
        sq, peak = slots[0], slots[1]
        names, per_tensor, relative, peaks = [], [], [], []
        n_total = 0
        for t, (name, p) in enumerate(self.named):
            n = p.numel()
            n_total += n
            rms_dev = float(sq[:, t].max().clamp(min=0).sqrt()) / n ** 0.5
            scale = float(p.detach().double().pow(2).mean().sqrt())
            names.append(name)
            per_tensor.append(rms_dev)
            relative.append(rms_dev / scale if scale > 0 else (0.0 if rms_dev == 0 else float("inf")))
            peaks.append(float(peak[:, t].max()))
        rms = float(sq.sum(dim=1).max().clamp(min=0).sqrt()) / max(n_total, 1) ** 0.5
        return DriftEstimate(names, per_tensor, relative, peaks, rms)


def _state_tensors(optimizer, parameters):
    """The optimiser's per-parameter float tensors shaped like their parameter (Adam's exp_avg,
    exp_avg_sq, SGD's momentum_buffer, ...), in a fixed order."""
    out = []
    if optimizer is None:
        return out
    for p in parameters:
        state = optimizer.state.get(p, {})
        for key in sorted(state):
            v = state[key]
            if torch.is_tensor(v) and v.is_floating_point() and v.shape == p.shape:
                out.append(v)
    return out


def resync(comm, parameters, optimizer=None, names=None):
    """Replaces parameters (and the optimiser's per-parameter state) by their exact average over
    ranks, through the exact ring on `comm`; only the parameters called `names` if given (every
    rank must pass the same). `parameters`: a module, or tensors or (name, tensor) pairs (an
    iterator is enumerated once). Collective. Returns the elements all-reduced. No parameters,
    or names that match none, raise ValueError before any communication."""
    named = _named_parameters(parameters, "resync")
    params = [p for n, p in named if names is None or n in names]
    if not params:
        raise ValueError("resync: none of the names %s is a parameter's (they are %s)"
                         % (sorted(names), [n for n, _ in named]))
    tensors = [p.data for p in params] + _state_tensors(optimizer, params)
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    total = 0
    with torch.no_grad():
        for dtype in sorted(by_dtype, key=str):
            group = by_dtype[dtype]
            flat = torch.cat([t.reshape(-1) for t in group])
            comm.allreduce(flat, None, average=True)
            offset = 0
            for t in group:
                t.copy_(flat[offset:offset + t.numel()].view_as(t))
                offset += t.numel()
            total += flat.numel()
    return total


def _check_finite(estimate, step):
    """Non-finite parameters make the probe's figures NaN or inf, the same on every rank (they
    went through the exact ring), so every rank raises here, naming the tensors."""
    bad = [n for n, peak, rms in zip(estimate.names, estimate.peaks, estimate.per_tensor)
           if not (math.isfinite(peak) and math.isfinite(rms))]
    if bad:
        raise _cerar.NumericalError(
            "drift probe at step %d: parameters are non-finite (NaN or inf) on some rank in %s; "
            "training has diverged (look at the loss and the learning rate); drift cannot be "
            "measured or bounded" % (step, ", ".join(bad)))


class DriftControl:
    """Bounds replica drift: probes it and re-synchronises the replicas before it passes a
    threshold. Call after_step() after each optimizer.step().

    resync_every   re-synchronise every K steps regardless (None: never)
    resync_above   tau: re-synchronise when the probe's peak (estimated max |p_i - mean p|) is above
                   tau, or would be at the next step at the growth rate seen so far (inf: probe
                   only, never re-synchronise on the probe)
    probe_every    the longest gap between probes; the gap adapts below it (see below)
    start_after    steps to skip before the first probe: the hook's exact warm-up, during which the
                   replicas cannot drift (the gap starts at 1 when the coded path starts)

    Why the gap adapts: drift grows fastest right after the warm-up, when Adam's second moments
    are still small, and one step can add about lr to it. A fixed gap of 10 let it pass 2 tau
    between two probes (docs/training.md section 5). So the gap starts at 1, at most doubles per
    probe, and never exceeds the steps the growth g leaves before the peak reaches tau:
    gap = floor((tau - peak) / g). g is the rise of the peak since the last probe, taken as if all
    of it came in the last step (drift rises in jumps: a coordinate on which the ranks start to
    disagree moves apart by about lr per step), or 0.9 g if that is larger, so a quiet interval
    forgets a fast one slowly. A re-sync zeroes the drift of the tensors it re-synchronises and
    keeps g. `history` keeps (step, DriftEstimate, resynced) per probe.

    `parameters`: the module, or its parameters (a list, or an iterator such as
    model.parameters(), enumerated once here). A probe that finds non-finite parameters raises
    cerar.NumericalError on every rank, naming the tensors."""

    def __init__(self, comm, parameters, optimizer=None, *, probe_every=10, resync_every=None,
                 resync_above=None, start_after=0, sync_optimizer_state=True,
                 buckets=_MAX_BUCKETS):
        if probe_every is not None:
            probe_every = whole("probe_every", probe_every, ValueError)
        if resync_every is not None:
            resync_every = whole("resync_every", resync_every, ValueError)
        start_after = whole("start_after", start_after, ValueError)
        if probe_every is not None and probe_every < 1:
            raise ValueError("probe_every = %r, expected >= 1 or None" % (probe_every,))
        if resync_every is not None and resync_every < 1:
            raise ValueError("resync_every = %r, expected >= 1 or None" % (resync_every,))
        if resync_above is not None and not probe_every:
            raise ValueError("resync_above needs probe_every")
        if resync_above is not None:
            resync_above = number("resync_above", resync_above, ValueError)
        if resync_above is not None and not resync_above > 0:
            raise ValueError("resync_above = %r, expected > 0" % (resync_above,))
        if start_after < 0:
            raise ValueError("start_after = %r, expected >= 0" % (start_after,))
        self.comm = comm
        # Enumerated once: an iterator (model.parameters()) would be empty at the next re-sync.
        self.named = _named_parameters(parameters, "DriftControl")
        self.optimizer = optimizer if sync_optimizer_state else None
        self.probe_every = probe_every
        self.resync_every = resync_every
        self.resync_above = resync_above
        self.start_after = start_after
        self.probe_ = DriftProbe(comm, self.named, buckets) if probe_every else None
        self.step = 0
        self.resyncs = 0
        self.probes = 0
        self.history = []
        self.growth = 0.0  # g: estimated growth of the peak per step
        self.gap = 0  # the last gap; 0 until the first probe
        self._next_probe = self.start_after + 1
        self._last_peak = 0.0  # the peak at the last probe, or what a re-sync left

    def _schedule(self, peak):
        """The gap to the next probe (see the class docstring); all ranks compute the same."""
        limit = 1 if self.gap == 0 else min(self.probe_every, 2 * self.gap)
        if self.resync_above is None or self.growth <= 0:
            return limit
        room = max(self.resync_above - peak, 0.0) / self.growth
        if not room < limit:  # inf (resync_above=inf: probe only, or tau / g overflowed)
            return limit
        return max(1, int(room))

    def _resync(self, estimate=None):
        """All tensors, or with an estimate only those whose peak is above resync_above / 2 (and
        the worst one): drift sits in a few tensors, and with Adam a re-sync costs 3 times their
        size."""
        if estimate is None:
            resync(self.comm, self.named, self.optimizer)
            self._last_peak = 0.0
        else:
            cut = min(self.resync_above / 2, estimate.peak)  # the worst tensor at least
            names = {n for n, peak in zip(estimate.names, estimate.peaks) if peak >= cut}
            resync(self.comm, self.named, self.optimizer, names)
            self._last_peak = max([peak for peak in estimate.peaks if peak < cut], default=0.0)

    def after_step(self):
        self.step += 1
        resynced = False
        if self.resync_every and self.step % self.resync_every == 0:
            self._resync()
            resynced = True
        if self.probe_ is not None and self.step >= self._next_probe:
            estimate = self.probe_.probe()
            self.probes += 1
            _check_finite(estimate, self.step)
            peak = estimate.peak
            if not resynced:
                # As if all of the rise came in the last step: drift rises in jumps.
                self.growth = max(peak - self._last_peak, 0.9 * self.growth)
                self._last_peak = peak
            if (not resynced and self.resync_above is not None
                    and peak + self.growth > self.resync_above):
                self._resync(estimate)
                resynced = True
            self.gap = self._schedule(self._last_peak)
            self._next_probe = self.step + self.gap
            self.history.append((self.step, estimate, resynced))
        if resynced:
            self.resyncs += 1
        return resynced


def replica_diff(parameters, group=None):
    """Diagnostic (exact, costs two all-reduces on the torch.distributed group): the largest
    |p_i - p_j| over all coordinates and pairs of ranks, and the same divided by the largest
    |p| of the model."""
    import torch.distributed as dist
    params = [p for _, p in _named_parameters(parameters)]
    with torch.no_grad():
        flat = torch.cat([p.detach().reshape(-1).double() for p in params])
        hi, lo = flat.clone(), flat.clone()
        dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=group)
        dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=group)
        diff = float((hi - lo).max()) if flat.numel() else 0.0
        scale = float(flat.abs().max()) if flat.numel() else 0.0
    return diff, (diff / scale if scale > 0 else 0.0)
