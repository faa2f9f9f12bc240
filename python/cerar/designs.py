"""Designs: load a file, pick one from the catalogue for (N, c, dtype), or make one."""
import glob
import json
import os
import re
import warnings

from . import _cerar
from ._args import C_INT, whole

_DTYPES = {"float32": "float32", "f32": "float32", "float64": "float64", "f64": "float64"}
# The error model's arithmetics (docs/error-model.md) beyond the dtypes: float32 packets with
# float64 arithmetic, feedback or state (the runtime's accumulations f64, f64+feedback, f64-state).
_MIXED = ("float32+acc64", "float32+acc64+feedback", "float32+state64")


class Design:
    """A validated, immutable CERAR design (PROTOCOL.md): N ranks, c components, L = c + N - 2
    rounds, the encoders and decoders, how it was made (provenance) and its figures."""

    def __init__(self, native, path=None):
        self._native = native
        self.path = path

    N = property(lambda self: self._native.N)
    c = property(lambda self: self._native.c)
    L = property(lambda self: self._native.L)
    fingerprint = property(lambda self: self._native.fingerprint)
    figures = property(lambda self: self._native.figures, doc="dict, or None when not recorded")
    exact_figures = property(lambda self: self._native.exact_figures)
    notes = property(lambda self: self._native.notes)

    @property
    def provenance(self):
        """{"construction": ..., "shift_invariant": ..., "parameters": {...}}"""
        return {
            "construction": self._native.construction,
            "shift_invariant": self._native.shift_invariant,
            "parameters": json.loads(self._native.parameters_json),
        }

    @property
    def exact(self):
        """True when the decoded sum is exact up to rounding (c <= N designs)."""
        f = self.figures
        return f is not None and f["err_rms"] < 1e-12

    def bytes_per_element(self, dtype="float32"):
        """Bytes each rank sends per element all-reduced: L/c elements (ring: 2(N-1)/N)."""
        return self._native.traffic_rate * (4 if _dtype(dtype) == "float32" else 8)

    def traffic_ratio(self):
        """Bytes sent per rank against the exact ring's: (L/c) / (2(N-1)/N)."""
        return self._native.traffic_rate / self._native.ring_traffic_rate

    def predicted_error(self, dtype="float32"):
        """Predicted relative error of one all-reduce in that arithmetic (docs/error-model.md)."""
        f = self.figures
        key = _arithmetic(dtype)
        if f is not None and key in f["predicted_error"]:
            return f["predicted_error"][key]
        if _cerar._with_toolkit:
            return _cerar._predicted_error(self._native, key)
        raise ValueError("design has no predicted %s error and this build has no toolkit" % key)

    def encoder(self, rank):
        return self._native.encoder(whole("encoder rank", rank, _cerar.InvalidArgument, C_INT))

    def decoder(self, rank):
        return self._native.decoder(whole("decoder rank", rank, _cerar.InvalidArgument, C_INT))

    def save(self, path):
        """Writes the design file atomically (never a partial file)."""
        self._native.save(os.fspath(path))

    def __repr__(self):
        err = self.figures["err_rms"] if self.figures else float("nan")
        where = " from %s" % self.path if self.path else ""
        return "<cerar.Design %s N=%d c=%d L=%d err_rms=%.3g%s>" % (
            self._native.construction, self.N, self.c, self.L, err, where)


def _dtype(dtype):
    name = str(dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise ValueError("dtype %r, expected float32 or float64" % (dtype,))
    return _DTYPES[name]


def _arithmetic(name):
    """A dtype (float32, float64) or one of the mixed arithmetics, as the figures name it."""
    if str(name) in _MIXED:
        return str(name)
    try:
        return _dtype(name)
    except ValueError:
        raise ValueError("arithmetic %r, expected float32, float64 or one of %s"
                         % (name, ", ".join(_MIXED))) from None


def load_design(path):
    """Loads and validates a design file; raises cerar.IoError / cerar.DesignError naming it."""
    path = os.fspath(path)
    return Design(_cerar._load_design(path), path)


def _catalogue_dirs():
    """Where pick_design looks: $CERAR_MATRICES, the installed share/cerar/matrices, the build
    tree's source matrices/."""
    dirs = []
    if os.environ.get("CERAR_MATRICES"):
        dirs.append(os.environ["CERAR_MATRICES"])
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # installed: <prefix>/share/cerar/matrices, relative to this folder, written at install
        from ._install_paths import MATRICES as installed
        dirs.append(os.path.normpath(os.path.join(here, installed)))
    except ImportError:
        pass
    try:
        from ._build_paths import MATRICES  # written into the build tree only
        dirs.append(MATRICES)
    except ImportError:
        pass
    return [d for d in dirs if os.path.isdir(d)]


_NAME = re.compile(r"^[A-Za-z0-9-]+_N(\d+)_c(\d+)\.json$")
_summaries = {}  # path -> (mtime, summary): catalogue files are large (N = 32 ones: megabytes)


def _summary(path):
    try:
        mtime = os.path.getmtime(path)  # a dangling symlink raised a bare FileNotFoundError here
    except OSError as e:
        raise _cerar.DesignError("catalogue file %s: cannot read it (%s: %s); fix or remove it"
                                 % (path, type(e).__name__, e)) from None
    cached = _summaries.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    try:
        with open(path) as f:
            doc = json.load(f)
        fig = doc.get("figures", {})
        summary = {"path": path, "N": doc["N"], "c": doc["c"],
                   "construction": doc["provenance"]["construction"],
                   "err_rms": fig.get("err_rms"), "predicted_error": fig.get("predicted_error", {})}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise _cerar.DesignError("catalogue file %s: cannot read its summary (%s: %s); fix or "
                                 "remove it" % (path, type(e).__name__, e)) from None
    # pick_design selects by the name: a file whose content disagrees would be used for the
    # wrong (N, c).
    named = tuple(int(g) for g in _NAME.match(os.path.basename(path)).groups())
    if named != (summary["N"], summary["c"]):
        raise _cerar.DesignError("catalogue file %s holds a design for N = %s, c = %s, but its "
                                 "name says N = %d, c = %d" % (path, summary["N"], summary["c"],
                                                               *named))
    _summaries[path] = (mtime, summary)
    return summary


def _catalogue_files(N=None, c=None):
    """Catalogue files named <kind>_N<N>_c<c>.json (scripts/make-catalogue's names), first
    folder first, optionally only those for (N, c)."""
    out, seen = [], set()
    for d in _catalogue_dirs():
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            name = os.path.basename(path)
            match = _NAME.match(name)
            if not match or name in seen:
                continue
            seen.add(name)
            if N is None or (int(match.group(1)), int(match.group(2))) == (N, c):
                out.append((int(match.group(1)), int(match.group(2)), path))
    return out


def catalogue():
    """Every catalogue design file: a list of dicts (path, N, c, construction, err_rms,
    predicted_error), read with the standard library (the files are plain JSON)."""
    return [_summary(path) for _, _, path in _catalogue_files()]


def pick_design(N, c, dtype="float32"):
    """The catalogue design for (N, c) with the smallest predicted error in `dtype` (float32,
    float64, or a mixed arithmetic such as "float32+state64"), loaded and validated. A file
    without that figure is evaluated by the toolkit where the build has it, else not considered.
    Raises cerar.InvalidArgument naming what the catalogue has when none fits."""
    key = _arithmetic(dtype)
    N, c = whole("N", N, _cerar.InvalidArgument), whole("c", c, _cerar.InvalidArgument)
    entries = [_summary(path) for _, _, path in _catalogue_files(N, c)]
    if not entries:
        have = sorted({(n, k) for n, k, _ in _catalogue_files()})
        raise _cerar.InvalidArgument(
            "no catalogue design for N = %d, c = %d (catalogue has (N, c) in %s; "
            "cerar.make_design makes one)" % (N, c, have))

    def predicted(e):
        if key in e["predicted_error"]:
            return e["predicted_error"][key]
        if _cerar._with_toolkit:  # files that predate the figure (the float32 ones: no state64)
            return _cerar._predicted_error(load_design(e["path"])._native, key)
        return float("inf")

    figures = [predicted(e) for e in entries]
    if all(f == float("inf") for f in figures):  # no toolkit and no file with the figure
        # It ranked them by their float32 figure, or took the first file, without a word.
        raise _cerar.InvalidArgument(
            "no catalogue design for N = %d, c = %d has a predicted %s error (%s), and this "
            "build has no toolkit to evaluate one (CERAR_BUILD_DESIGN=OFF): pick for another "
            "arithmetic, load_design a file, or build with the toolkit"
            % (N, c, key, ", ".join(os.path.basename(e["path"]) for e in entries)))
    return load_design(entries[figures.index(min(figures))]["path"])


def make_design(N, c, dtype="float32", construction="eps", eps=None, precision="auto",
                max_digits=None):
    """Makes a design with the toolkit: the `construction` ("eps" or "vandermonde") with eps tuned
    for `dtype` (or the given eps). `max_digits` bounds the high-precision analysis (50 ... 10000
    digits, default the toolkit's; `cerar design --max-digits`). Needs a build with the toolkit (CERAR_BUILD_DESIGN=ON)."""
    if not _cerar._with_toolkit:
        raise _cerar.InvalidArgument(
            "make_design needs the design toolkit; this build has CERAR_BUILD_DESIGN=OFF "
            "(pick_design or load_design work without it)")
    N = whole("N", N, _cerar.InvalidArgument, C_INT)
    c = whole("c", c, _cerar.InvalidArgument, C_INT)
    max_digits = (_cerar._default_max_digits if max_digits is None
                  else whole("max_digits", max_digits, _cerar.InvalidArgument, C_INT))
    for name, value in (("construction", construction), ("precision", precision)):
        if not isinstance(value, str):  # pybind11's generic TypeError otherwise
            raise _cerar.InvalidArgument("make_design: %s = %r, expected a name (a str)"
                                         % (name, value))
    if eps is not None and (isinstance(eps, (str, bool)) or not isinstance(eps, (int, float))
                            and type(eps).__module__ != "numpy"):
        raise _cerar.InvalidArgument("make_design: eps = %r, expected a number" % (eps,))
    _check_cost("make_design(N=%d, c=%d)" % (N, c),
                *_cerar._make_design_cost(N, c, eps is None, precision))
    native = _cerar._make_design(construction, N, c, None if eps is None else float(eps),
                                 _arithmetic(dtype), precision, max_digits)
    return Design(native)


def _check_cost(what, seconds, bytes_):
    """The CLI's rule (docs/hardening.md, "Cost estimates"): refuse a request whose estimated
    memory exceeds what the process can use; warn when it will take longer than a minute."""
    available = _cerar._available_memory_bytes()
    if bytes_ > available:
        raise _cerar.InvalidArgument(
            "%s needs about %.3g GB of memory (estimate, docs/hardening.md), more than the %.3g GB "
            "this process can use" % (what, bytes_ / 1e9, available / 1e9))
    if seconds > 60:
        took = ("%.0f s" % seconds if seconds < 120 else
                "%.0f min" % (seconds / 60) if seconds < 7200 else "%.1f h" % (seconds / 3600))
        warnings.warn("%s is estimated to take about %s and %.3g GB (docs/hardening.md)"
                      % (what, took, bytes_ / 1e9), stacklevel=3)
