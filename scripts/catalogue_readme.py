"""Keeps the useful designs of a generated catalogue and writes matrices/README.md.

Usage: catalogue_readme.py GENERATED_DIR MATRICES_DIR USEFUL_ERROR
Standard library only; reads the design files through scripts/read_design.py.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import read_design  # noqa: E402


OPTIMIZED_PREFIX = "Optimised designs ("
STATE64_PREFIX = "Optimised for float32 packets with float64 state ("
# What scripts/make-catalogue-optimized writes for each --tune target: file prefix, listing.
TUNES = {
    "float32": ("opt", "OPTIMIZED.md", OPTIMIZED_PREFIX),
    "float32+state64": ("opt-state64", "OPTIMIZED-STATE64.md", STATE64_PREFIX),
}


def shape_key(name):
    """[N, c] of a catalogue file name <kind>_N<N>_c<c>.json, for sorting."""
    n, c = name[:-5].rsplit("_N", 1)[1].split("_c")
    return [int(n), int(c)]


def optimized_line(dst, tune="float32"):
    """One line naming the designs scripts/make-catalogue-optimized wrote to dst for `tune`, or
    "" where it has not run."""
    prefix, listing, lead = TUNES[tune]
    names = sorted((n for n in os.listdir(dst) if n.startswith(prefix + "_N") and n.endswith(".json")),
                   key=shape_key)
    if not os.path.exists(os.path.join(dst, listing)):
        return ""
    command = "`scripts/make-catalogue-optimized`" if tune == "float32" else \
        "`scripts/make-catalogue-optimized --tune %s`" % tune
    return (lead + command + ", listed in [%s](%s)): " % (listing, listing)
            + (", ".join("[%s](%s)" % (n, n) for n in names) if names else "none beat the eps designs") + ".")


def optimized_lines(dst):
    """The lines of every tune that has run, each preceded by a blank line."""
    out = []
    for tune in TUNES:
        line = optimized_line(dst, tune)
        if line:
            out += ["", line]
    return out


def main():
    src, dst, useful = sys.argv[1], sys.argv[2], float(sys.argv[3])
    kept, dropped = [], []
    for name in sorted(os.listdir(src), key=lambda n: [int(x) for x in n[5:-5].replace("_c", " ").split()]):
        d = read_design.load(os.path.join(src, name))
        f = d["figures"]
        n, c = d["N"], d["c"]
        row = {
            "file": name, "N": n, "c": c, "L": c + n - 2,
            "traffic": (c + n - 2) / c, "ring": 2 * (n - 1) / n,
            "err_rms": f["err_rms"], "pred32": f["predicted_error"]["float32"],
            "kappa_dec": f["kappa_dec"], "eps": d["provenance"]["parameters"].get("eps", 0.0),
        }
        if row["pred32"] <= useful:
            kept.append(row)
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
        else:
            dropped.append(row)
    lines = [
        "# Design catalogue",
        "",
        "Float32-tuned eps designs (PROTOCOL.md §6), written by `scripts/make-catalogue`",
        "(`cerar design --construction eps --tune float32`, then `cerar validate`). Every file",
        "here is checked by the test suite. Traffic is per-rank bytes sent over d; the ring",
        "all-reduce sends 2(N-1)/N d. Predicted float32 error is docs/error-model.md's model.",
        "",
        "| N | c | L | eps | traffic | ring | traffic/ring | err_rms | predicted float32 error | kappa_dec | file |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in kept:
        lines.append(
            f"| {r['N']} | {r['c']} | {r['L']} | {r['eps']:.3g} | {r['traffic']:.3f} | {r['ring']:.3f} | "
            f"{r['traffic'] / r['ring']:.2f} | {r['err_rms']:.2e} | {r['pred32']:.2e} | "
            f"{r['kappa_dec']:.2e} | [{r['file']}]({r['file']}) |")
    lines += ["", "Notes: with N = 2 every c is exact (each rank has one window, so D = W^-1) but L = c, so",
              "traffic equals the ring's; CERAR gains nothing there. At c = N every eps gives an exact",
              "design (kappa_dec = sqrt(2) for N >= 3), so tuning keeps the smallest eps of its grid."]
    if dropped:
        lines += ["", f"Left out: predicted float32 error above {useful:g}, too large to be a useful",
                  "approximation of a gradient sum (the error floor rises as c/N grows, because",
                  "kappa grows like eps^-r* with r* = ceil(c/N) - 1):", "",
                  "| N | c | eps | err_rms | predicted float32 error | kappa_dec |", "|---|---|---|---|---|---|"]
        for r in dropped:
            lines.append(f"| {r['N']} | {r['c']} | {r['eps']:.3g} | {r['err_rms']:.2e} | {r['pred32']:.2e} | {r['kappa_dec']:.2e} |")
    lines += optimized_lines(dst)
    with open(os.path.join(dst, "README.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
