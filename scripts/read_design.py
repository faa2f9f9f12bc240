#!/usr/bin/env python3
"""Reads and verifies a CERAR design file (docs/design-format.md) with the standard library only.

    python3 scripts/read_design.py FILE     verify, print N, c, L, provenance and figures
                                            (exit 0; exit 2 with one line on a bad file)

As a module: load(path) -> dict (the document; matrices as lists of lists of floats; raises
DesignFileError), fingerprint(doc) -> int (the C++ Design::fingerprint()).
"""
import hashlib
import json
import math
import struct
import sys

FORMAT_NAME = "cerar-design"
VERSION = 2  # 2 adds figures.certified_digits; version-1 files are read as well
OLDEST_VERSION = 1
CANONICAL_TAG = b"cerar-design-canonical-v1\n"
FINGERPRINT_TAG = b"cerar-fingerprint-v1\n"
MAX_N = 1 << 16
MAX_C = 1 << 16
MAX_MATRIX_ENTRIES = 1 << 27
TOP_KEYS = {"format", "version", "N", "c", "L", "provenance", "figures", "exact_figures",
            "notes", "encoders", "decoders", "integrity"}
OPTIONAL_TOP_KEYS = {"figures", "exact_figures"}
FIGURE_KEYS = {"err_op", "err_rms", "kappa_dec", "kappa_enc", "err_op_per_rank",
               "err_rms_per_rank", "kappa_dec_per_rank", "kappa_enc_per_rank", "precision",
               "predicted_error"}
PROVENANCE_KEYS = {"construction", "shift_invariant", "parameters"}


class DesignFileError(Exception):
    """A design file is unreadable or breaks the format; str() is one line naming the problem."""


def _canonical(value, update):
    """Type-tagged canonical bytes of a parsed JSON value (docs/design-format.md, Integrity)."""
    if value is None:
        update(b"n")
    elif value is True:
        update(b"t")
    elif value is False:
        update(b"f")
    elif isinstance(value, int) and -2**63 <= value < 2**64:
        update(b"i" + str(value).encode("ascii") + b";")
    elif isinstance(value, (int, float)):  # an integer beyond 64 bits: C++ reads it as a float64
        update(b"d" + struct.pack("<d", float(value)))
    elif isinstance(value, str):
        data = value.encode("utf-8")
        update(b"s" + struct.pack("<Q", len(data)) + data)
    elif isinstance(value, list):
        update(b"a" + struct.pack("<Q", len(value)))
        for item in value:
            _canonical(item, update)
    elif isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-8"))
        update(b"o" + struct.pack("<Q", len(keys)))
        for key in keys:
            _canonical(key, update)
            _canonical(value[key], update)
    else:
        raise DesignFileError("cannot hash a %s" % type(value).__name__)


def integrity_value(doc):
    """'sha256:' + hex digest over the canonical bytes of doc without its "integrity" member."""
    sha = hashlib.sha256(CANONICAL_TAG)
    _canonical({k: v for k, v in doc.items() if k != "integrity"}, sha.update)
    return "sha256:" + sha.hexdigest()


def fingerprint(doc):
    """Design::fingerprint(): first 8 bytes (big-endian) of SHA-256 over the tag, u32le N,
    u32le c, then every E_i and every D_i row by row as little-endian float64."""
    sha = hashlib.sha256(FINGERPRINT_TAG + struct.pack("<II", doc["N"], doc["c"]))
    for name in ("encoders", "decoders"):
        for matrix in doc[name]:
            for row in matrix:
                sha.update(struct.pack("<%dd" % len(row), *row))
    return int.from_bytes(sha.digest()[:8], "big")


def _reject_constant(token):
    raise ValueError("%s is not a JSON number" % token)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check(doc, fail):
    if not isinstance(doc, dict):
        fail("top level is not a JSON object")
    if doc.get("format") != FORMAT_NAME:
        fail("format is %s, expected %s" % (json.dumps(doc.get("format")), json.dumps(FORMAT_NAME)))
    version = doc.get("version")
    if not _is_int(version):
        fail("version is %s, expected an integer" % json.dumps(version))
    if not OLDEST_VERSION <= version <= VERSION:
        fail("format version %d is not supported (this reader reads versions %d to %d)"
             % (version, OLDEST_VERSION, VERSION))
    for key in doc:
        if key not in TOP_KEYS:
            fail('unknown member "%s" at the top level' % key)
    for key in TOP_KEYS - OPTIONAL_TOP_KEYS:
        if key not in doc:
            fail('missing member "%s"' % key)
    n, c = doc["N"], doc["c"]
    if not _is_int(n) or not _is_int(c):
        fail("N and c must be integers")
    if n < 2:
        fail("N = %d, expected N >= 2" % n)
    if c < 1:
        fail("c = %d, expected c >= 1" % c)
    if n > MAX_N or c > MAX_C or n * ((c + n - 2) * c + c * c) > MAX_MATRIX_ENTRIES:
        fail("N = %d, c = %d exceed the size limits" % (n, c))
    rows = c + n - 2
    if doc["L"] != rows:
        fail("L = %s, expected %d = c + N - 2" % (json.dumps(doc["L"]), rows))

    def matrix(value, name, nrows, rows_rule, ncols):
        if not isinstance(value, list) or len(value) != nrows:
            fail("%s has %s rows, expected %d = %s" % (
                name, len(value) if isinstance(value, list) else "no", nrows, rows_rule))
        for r, row in enumerate(value):
            if not isinstance(row, list) or len(row) != ncols:
                fail("%s row %d has %s columns, expected %d = c" % (
                    name, r, len(row) if isinstance(row, list) else "no", ncols))
            for k, x in enumerate(row):
                if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                    fail("%s[%d][%d] is %s, expected a finite number" % (name, r, k, json.dumps(x)))

    for name, letter, nrows, rule in (("encoders", "E", rows, "c + N - 2"), ("decoders", "D", c, "c")):
        mats = doc[name]
        if not isinstance(mats, list) or len(mats) != n:
            fail("%s has %s matrices, expected %d = N" % (
                name, len(mats) if isinstance(mats, list) else "no", n))
        for i, m in enumerate(mats):
            matrix(m, "%s[%d]" % (letter, i), nrows, rule, c)

    prov = doc["provenance"]
    if not isinstance(prov, dict) or set(prov) != PROVENANCE_KEYS:
        fail("provenance must be an object with members %s" % ", ".join(sorted(PROVENANCE_KEYS)))
    if not isinstance(prov["construction"], str) or not prov["construction"]:
        fail("provenance.construction must be a non-empty string")
    if not isinstance(prov["shift_invariant"], bool) or not isinstance(prov["parameters"], dict):
        fail("provenance.shift_invariant must be true/false and provenance.parameters an object")

    def figure(x, name):
        if x == "inf":
            return
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
            fail('%s is %s, expected a number >= 0 or "inf"' % (name, json.dumps(x)))

    for name in ("figures", "exact_figures"):
        if name not in doc:
            continue
        fig = doc[name]
        if not isinstance(fig, dict) or not FIGURE_KEYS <= set(fig) <= FIGURE_KEYS | {"certified_digits"}:
            fail("%s must be an object with members %s (and optionally certified_digits)"
                 % (name, ", ".join(sorted(FIGURE_KEYS))))
        if "certified_digits" in fig and version < 2:
            fail("%s.certified_digits needs format version 2, the file says %d" % (name, version))
        certified = fig.get("certified_digits", {})
        if not isinstance(certified, dict) or not all(
                k in ("err_op", "err_rms", "kappa_dec", "kappa_enc") and isinstance(v, int)
                and not isinstance(v, bool) and 0 <= v <= 17 for k, v in certified.items()):
            fail("%s.certified_digits must map err_op, err_rms, kappa_dec, kappa_enc to 0 ... 17"
                 % name)
        for key in ("err_op", "err_rms", "kappa_dec", "kappa_enc"):
            figure(fig[key], "%s.%s" % (name, key))
        for key in ("err_op_per_rank", "err_rms_per_rank", "kappa_dec_per_rank", "kappa_enc_per_rank"):
            values = fig[key]
            if not isinstance(values, list) or len(values) not in (0, n):
                fail("%s.%s must be a list of N = %d values (or none)" % (name, key, n))
            for k, x in enumerate(values):
                figure(x, "%s.%s[%d]" % (name, key, k))
        if not isinstance(fig["precision"], str):
            fail("%s.precision must be a string" % name)
        if not isinstance(fig["predicted_error"], dict):
            fail("%s.predicted_error must be an object" % name)
        for key, x in fig["predicted_error"].items():
            figure(x, '%s.predicted_error["%s"]' % (name, key))
    notes = doc["notes"]
    if not isinstance(notes, list) or not all(isinstance(s, str) for s in notes):
        fail("notes must be a list of strings")

    stored = doc["integrity"]
    computed = integrity_value(doc)
    if not isinstance(stored, str) or not stored.startswith("sha256:") or len(stored) != len(computed):
        fail('integrity is %s, expected "sha256:" followed by 64 hex digits' % json.dumps(stored))
    if stored != computed:
        fail("integrity value does not match the contents (file edited or corrupted): "
             "stored %s, computed %s" % (stored, computed))


def _object_without_duplicates(pairs):
    """A JSON object; a member named twice is refused (a last-wins and a first-wins reader
    would otherwise see two different designs in one file)."""
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError("duplicate member %r" % key)
        obj[key] = value
    return obj


def load(path):
    """Loads and fully verifies a design file; returns the document as a dict."""
    def fail(what):
        raise DesignFileError("design file %s: %s" % (path, what))

    try:
        with open(path, "r", encoding="utf-8-sig") as f:  # a leading BOM, as nlohmann skips it
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        fail("cannot read (%s)" % e)
    if not text.strip():
        fail("file is empty")
    try:
        doc = json.loads(text, parse_constant=_reject_constant,
                         object_pairs_hook=_object_without_duplicates)
    except (ValueError, RecursionError) as e:
        fail("not valid JSON (truncated or corrupted?): %s" % e)
    try:
        _check(doc, fail)
    except (UnicodeEncodeError, RecursionError) as e:
        fail("cannot hash the contents (%s)" % e)
    return doc


def _text(x):
    return x if isinstance(x, str) else "%.6g" % x


def main(argv):
    if len(argv) != 2:
        print("usage: read_design.py FILE", file=sys.stderr)
        return 2
    try:
        doc = load(argv[1])
    except DesignFileError as e:
        print(e, file=sys.stderr)
        return 2
    prov = doc["provenance"]
    print("file        %s (verified %s)" % (argv[1], doc["integrity"][:19] + "..."))
    print("N %d  c %d  L %d   traffic L/c %.4g   ring 2(N-1)/N %.4g" % (
        doc["N"], doc["c"], doc["L"], doc["L"] / doc["c"], 2 * (doc["N"] - 1) / doc["N"]))
    print("construction %s (shift_invariant %s) %s" % (
        prov["construction"], str(prov["shift_invariant"]).lower(),
        json.dumps(prov["parameters"], sort_keys=True)))
    print("fingerprint %016x" % fingerprint(doc))
    for name in ("figures", "exact_figures"):
        if name in doc:
            fig = doc[name]
            print("%-12s err_op %s  err_rms %s  kappa_dec %s  kappa_enc %s  [%s]" % (
                name, _text(fig["err_op"]), _text(fig["err_rms"]), _text(fig["kappa_dec"]),
                _text(fig["kappa_enc"]), fig["precision"]))
            for arith, value in sorted(fig["predicted_error"].items()):
                print("             predicted error %s: %s" % (arith, _text(value)))
    for note in doc["notes"]:
        print("note        %s" % note)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
