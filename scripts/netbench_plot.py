#!/usr/bin/python3
"""Reads the CSV of scripts/netbench (cerar-bench rows) and
   netbench_plot.py CSV PNG     draws CERAR's time / the ring's time against the size, one panel
                                per (N, rate), with each design's byte ratio as a dashed line
   netbench_plot.py --table CSV prints the Markdown table of docs/benchmarks.md
   netbench_plot.py --times CSV where each rank's run went: waiting, arithmetic, the rest
   netbench_plot.py --check CSV [ALGORITHMS]  the checks of `scripts/netbench quick` (exit 1 on
                                failure); ALGORITHMS: the ones the run had (default all four)
   netbench_plot.py --goals CSV [SWEEP_CSV]  the figures behind issue 11's goals (docs/benchmarks.md)
   netbench_plot.py --slots CSV  CERAR with two send-slot counts side by side (rows DESIGN/K8 and
                                DESIGN/K3 of `scripts/netbench run --slots 8,3`): time, link, ratio
The notebook notebooks/netbench.ipynb imports this module for the same figure."""
import csv
import math
import os
import sys
from collections import defaultdict

# Wire check: the TCP payload each rank put on its interface (frames minus 66 header bytes each,
# see apps/bench/net_counters.h) against the traffic model. The extra is Open MPI's own headers
# (a match header per message, rendezvous handshakes for messages above the eager limit), the
# bench's barrier and time reduction, and retransmitted segments.
WIRE_REL_TOL = 0.01
WIRE_ABS_TOL = 64 * 1024


class Bad(Exception):
    """Bad input: main prints it on one line and exits 2."""


def load(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise Bad(f"{path}: {e.strerror}")
    if not rows:
        raise Bad(f"{path}: no rows (an empty or header-only CSV)")
    for line, r in enumerate(rows, start=2):
        for k, v in r.items():
            if k in ("algorithm", "design", "accumulation"):
                continue
            try:
                r[k] = float(v) if v not in ("", None) else None
            except (TypeError, ValueError):
                raise Bad(f"{path}:{line}: {k} = {v!r} is not a number")
        r.setdefault("accumulation", "buffer")  # CSVs from before cerar-bench --accumulation
        for k in ("N", "c", "size_bytes"):
            if r.get(k) is None or r[k] != int(r[k]):
                raise Bad(f"{path}:{line}: {k} = {r.get(k)!r}: expected a whole number")
            r[k] = int(r[k])
    return rows


def cells(rows):
    """(N, rate, size) -> {name: row}, name = design for CERAR rows, else the algorithm."""
    out = defaultdict(dict)
    for r in rows:
        name = r["design"] if r["algorithm"] == "cerar" else r["algorithm"]
        out[(r["N"], r["rate_mbit"], r["size_bytes"])][name] = r
    return out


def byte_ratio(r, ring):
    return r["bytes_sent_per_rank"] / ring["bytes_sent_per_rank"]


def mib(b):
    return f"{b / 2**20:g} MiB"


def cerar_rows(rows):
    """(N, rate, size, cell, name, CERAR row, ring row) for every CERAR row whose cell has the
    ring, sorted."""
    for (N, rate, size), cell in sorted(cells(rows).items()):
        ring = cell.get("ring")
        if ring is None:
            continue
        for name, r in sorted(cell.items()):
            if r["algorithm"] == "cerar":
                yield N, rate, size, cell, name, r, ring


def link(x):
    """The link fraction as a percentage, "-" for CSVs without link counters (no --netdev)."""
    return f"{100 * x['link_fraction']:.0f} %" if x["link_fraction"] else "-"


def table(rows, out=sys.stdout):
    print("| N | c | design | rate Mbit/s | size | CERAR s | ring s | CERAR/ring time | byte ratio "
          "| time / byte ratio | CERAR link | ring link | MPI s (default, ring) "
          "| CPU s/rank CERAR, ring | rel. error | load |", file=out)
    print("|" + "---|" * 16, file=out)
    lf = link
    for N, rate, size, cell, name, r, ring in cerar_rows(rows):
        mpi = "/".join(f"{cell[a]['median_s']:.3f}" if a in cell else "-"
                       for a in ("mpi_allreduce", "mpi_allreduce_ring"))
        tr = r["median_s"] / ring["median_s"]
        br = byte_ratio(r, ring)
        print(f"| {N} | {r['c']} | {name} | {rate:g} | {mib(size)} | {r['median_s']:.3f} "
              f"| {ring['median_s']:.3f} | {tr:.3f} | {br:.3f} | {tr / br:.3f} | {lf(r)} "
              f"| {lf(ring)} | {mpi} | {r['cpu_s_per_rank']:.2f}, {ring['cpu_s_per_rank']:.2f} "
              f"| {r['rel_error']:.2e} | {r['load1']:.1f} |", file=out)


def times(rows, out=sys.stdout):
    """Where each rank's run went (RunTimes: waiting in Transport::Wait, arithmetic, progress
    calls, and the rest: starting exchanges, the loop, and for CSVs without progress_s the
    progress calls too), CERAR beside the ring; rows of CSVs that have it."""
    print("| N | design | rate Mbit/s | size | CERAR s | wait s/rank | arithmetic s/rank "
          "| progress s/rank | other s/rank | ring s | wait s/rank | arithmetic s/rank "
          "| CERAR link | ring link | load |", file=out)
    print("|" + "---|" * 15, file=out)
    for N, rate, size, cell, name, r, ring in cerar_rows(rows):
        if ring.get("wait_s_per_rank") is None or r.get("wait_s_per_rank") is None:
            continue
        progress = r.get("progress_s_per_rank")
        other = r["median_s"] - r["wait_s_per_rank"] - r["compute_s_per_rank"] - (progress or 0.0)
        pr = f"{progress:.3f}" if progress is not None else "-"
        print(f"| {N} | {name} | {rate:g} | {mib(size)} | {r['median_s']:.3f} "
              f"| {r['wait_s_per_rank']:.3f} | {r['compute_s_per_rank']:.3f} | {pr} "
              f"| {other:.3f} | {ring['median_s']:.3f} | {ring['wait_s_per_rank']:.3f} "
              f"| {ring['compute_s_per_rank']:.3f} | {link(r)} "
              f"| {link(ring)} | {r['load1']:.1f} |", file=out)


def plot(rows, png=None, axes=None):
    import matplotlib
    if png:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cs = cells(rows)
    panels = sorted({(N, rate) for (N, rate, _) in cs})
    if axes is None:
        ncol = len({rate for _, rate in panels})
        nrow = len({N for N, _ in panels})
        fig, axs = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.4 * nrow), squeeze=False,
                                sharey=True)
        Ns = sorted({N for N, _ in panels})
        rates = sorted({rate for _, rate in panels})
        axes = {(N, rate): axs[Ns.index(N)][rates.index(rate)] for N, rate in panels}
    else:
        fig = None
    # One colour per series across all panels (a design name, or an MPI algorithm).
    names = sorted({n for cell in cs.values() if "ring" in cell for n in cell if n != "ring"})
    colour = {n: "C%d" % (i % 10) for i, n in enumerate(names)}
    for (N, rate) in panels:
        ax = axes[(N, rate)]
        series = defaultdict(list)
        ratios = {}
        for (n, r_, size), cell in sorted(cs.items()):
            if (n, r_) != (N, rate) or "ring" not in cell:
                continue
            ring = cell["ring"]
            for name, r in cell.items():
                if name == "ring":
                    continue
                series[name].append((size / 2**20, r["median_s"] / ring["median_s"]))
                if r["algorithm"] == "cerar":
                    ratios[name] = byte_ratio(r, ring)
        for name, pts in sorted(series.items()):
            xs, ys = zip(*pts)
            style = "o-" if name in ratios else "x:"
            line, = ax.plot(xs, ys, style, label=name, ms=4, color=colour[name])
            if name in ratios:
                ax.axhline(ratios[name], color=line.get_color(), ls="--", lw=0.8)
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set_xscale("log", base=2)
        ax.set_title(f"N = {N}, {rate:g} Mbit/s per rank")
        ax.set_xlabel("size per rank (MiB)")
        ax.set_ylabel("time / exact ring's time")
        ax.grid(alpha=0.3)
    # Every panel's series (designs differ between N), each label once.
    legend = {}
    for ax in axes.values():
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    if fig is not None:
        # Below the panels, as many columns as the figure is wide, inside the figure so that
        # any savefig keeps it: the panels leave it about 0.2 inch per row of entries.
        columns = max(1, min(len(legend), 2 * len(axs[0])))
        rows_in = 0.2 * -(-len(legend) // columns) + 0.15
        fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=columns,
                   fontsize=8)
        fig.suptitle("All-reduce time relative to the exact ring\n(dashed: CERAR's byte ratio)")
        fig.tight_layout(rect=(0, rows_in / fig.get_figheight(), 1, 0.95))
        if png:
            fig.savefig(png, dpi=120)
    return fig


def check(rows, expected=("cerar", "ring", "mpi_allreduce", "mpi_allreduce_ring")):
    if all(r["wire_payload_per_rank"] is None for r in rows):
        raise Bad("--check needs the link counters (wire_payload_per_rank), which cerar-bench "
                  "writes only with --netdev")
    failures = []
    seen = set()
    for (N, rate, size), cell in sorted(cells(rows).items()):
        ring = cell.get("ring")
        for name, r in sorted(cell.items()):
            seen.add(r["algorithm"])
            what = f"N = {N}, {rate:g} Mbit/s, {mib(size)}, {name}"
            exp = r["expected_bytes_per_rank"]
            if r["bytes_sent_per_rank"] is not None and r["bytes_sent_per_rank"] != exp:
                failures.append(f"{what}: transport counted {r['bytes_sent_per_rank']:.0f} bytes "
                                f"per rank, model {exp:.0f}")
            if exp is not None:
                wire = r["wire_payload_per_rank"]
                if wire is None or abs(wire - exp) > WIRE_REL_TOL * exp + WIRE_ABS_TOL:
                    failures.append(f"{what}: {wire} payload bytes per rank on the link, model "
                                    f"{exp:.0f} (tolerance {WIRE_REL_TOL:.0%} + {WIRE_ABS_TOL})")
            err = r["rel_error"]
            if r["algorithm"] == "cerar":
                pred = r["predicted_error"]
                # A loose sanity bound on one run: the test suite holds the model to
                # [0.85, 1.2] of a float32 run (docs/error-model.md).
                if not (pred and pred / 3 <= err <= 3 * pred):
                    failures.append(f"{what}: relative error {err:.3e}, design predicts {pred} "
                                    "(factor 3)")
            elif not err <= 1e-6:
                failures.append(f"{what}: relative error {err:.3e} of an exact all-reduce "
                                "(float32 rounding is ~1e-7)")
            line = (f"{what}: {r['median_s']:.3f} s, CPU {r['cpu_s_per_rank']:.2f} s/rank, "
                    f"error {err:.2e}, payload {r['wire_payload_per_rank'] or 0:.0f} B/rank")
            if exp:
                line += f" (model {exp:.0f})"
            if r["link_fraction"]:
                line += f", link {100 * r['link_fraction']:.0f} % busy"
            if ring and name != "ring":
                line += f"; time / ring {r['median_s'] / ring['median_s']:.3f}"
                if r["algorithm"] == "cerar":
                    line += f", bytes / ring {byte_ratio(r, ring):.3f}"
            print(line)
    for a in expected:
        if a not in seen:
            failures.append(f"no {a} row in the CSV")
    for f in failures:
        print("FAILED:", f)
    print("netbench check:", "FAILED" if failures else "passed (timing ratios are not asserted)")
    return not failures


def goals(rows, sweep_rows=None, out=sys.stdout):
    """Per CERAR design at 100/200 Mbit/s and >= 16 MiB: time ratio over byte ratio (goal <= 1.05),
    link fraction (goal >= 0.85), and c = 3N's time against c = 2N's of the same kind; then, from
    the sweep, each design's time ratio per rate and the rate where it crosses 1 (interpolated)."""
    cs = cells(rows)
    print("| N | design | rate | size | time ratio | byte ratio | time/byte (<= 1.05) | link "
          "(>= 85 %) | c=3N time / c=2N time | link idle per round, ms: CERAR (L rounds) / ring "
          "(2(N-1) steps) |", file=out)
    print("|" + "---|" * 10, file=out)
    for (N, rate, size), cell in sorted(cs.items()):
        ring = cell.get("ring")
        if ring is None or rate not in (100, 200) or size < 16 << 20:
            continue
        for name, r in sorted(cell.items()):
            if r["algorithm"] != "cerar":
                continue
            tr, br = r["median_s"] / ring["median_s"], byte_ratio(r, ring)
            vs = "-"
            if r["c"] == 3 * N:
                twin = name.replace(f"_c{3 * N}", f"_c{2 * N}")
                if twin in cell:
                    vs = f"{r['median_s'] / cell[twin]['median_s']:.3f}"
            # Wall time the link stood idle, spread over the rounds (steps) that wait on a neighbour.
            idle = lambda x, rounds: 1e3 * x["median_s"] * (1 - x["link_fraction"]) / rounds
            L = r["c"] + N - 2
            print(f"| {N} | {name} | {rate:g} | {mib(size)} | {tr:.3f} | {br:.3f} | {tr / br:.3f} "
                  f"| {100 * r['link_fraction']:.1f} % | {vs} | {idle(r, L):.1f} (L = {L}) / "
                  f"{idle(ring, 2 * (N - 1)):.1f} |", file=out)
    if not sweep_rows:
        return
    print("\n| N | design | size | time ratio per rate (Mbit/s) | CPU s/rank CERAR/ring "
          "| cores busy CERAR/ring (N·CPU/wall) | link CERAR/ring | crossover |", file=out)
    print("|" + "---|" * 8, file=out)
    series = defaultdict(list)
    for (N, rate, size), cell in sorted(cells(sweep_rows).items()):
        ring = cell.get("ring")
        for name, r in cell.items():
            if ring and r["algorithm"] == "cerar":
                series[(N, name, size)].append((rate, r["median_s"] / ring["median_s"], r, ring))
    for (N, name, size), pts in sorted(series.items()):
        pts.sort()
        cross = f"above {pts[-1][0]:g}" if pts[-1][1] <= 1 else f"below {pts[0][0]:g}"
        for (r0, t0, *_), (r1, t1, *_) in zip(pts, pts[1:]):
            if t0 <= 1 < t1:
                cross = f"~{r0 + (1 - t0) / (t1 - t0) * (r1 - r0):.0f}"
                break
        else:
            if pts[0][1] > 1:
                cross = f"below {pts[0][0]:g}"
        per = ", ".join(f"{rate:g}: {t:.3f}" for rate, t, _, _ in pts)
        cpu = ", ".join(f"{rate:g}: {a['cpu_s_per_rank']:.2f}/{b['cpu_s_per_rank']:.2f}"
                        for rate, _, a, b in pts)
        busy = ", ".join(f"{rate:g}: {N * a['cpu_s_per_rank'] / a['median_s']:.2f}/"
                         f"{N * b['cpu_s_per_rank'] / b['median_s']:.2f}" for rate, _, a, b in pts)
        link = ", ".join(f"{rate:g}: {100 * a['link_fraction']:.0f}/{100 * b['link_fraction']:.0f} %"
                         for rate, _, a, b in pts)
        print(f"| {N} | {name} | {mib(size)} | {per} | {cpu} | {busy} | {link} "
              f"| {cross} Mbit/s |", file=out)


def slots(rows, out=sys.stdout):
    """Each CERAR design run with two windows in the same cells (names DESIGN/K<a>, DESIGN/K<b>):
    the larger window's time over the smaller's, per cell, and the range per size."""
    print("| N | design | rate | size | windows | time s | link | time ratio |", file=out)
    print("|" + "---|" * 8, file=out)
    by_size = defaultdict(list)
    for (N, rate, size), cell in sorted(cells(rows).items()):
        runs = defaultdict(dict)  # design -> {K: row}
        for name, r in cell.items():
            base, _, k = name.rpartition("/K")
            if r["algorithm"] == "cerar" and base and k.isdigit():
                runs[base][int(k)] = r
        for base, by_k in sorted(runs.items()):
            if len(by_k) != 2:
                continue
            (k_lo, lo), (k_hi, hi) = sorted(by_k.items())
            ratio = hi["median_s"] / lo["median_s"]
            by_size[size].append(ratio)
            print(f"| {N} | {base} | {rate:g} | {mib(size)} | K = {k_hi} / {k_lo} "
                  f"| {hi['median_s']:.3f} / {lo['median_s']:.3f} "
                  f"| {100 * hi['link_fraction']:.1f} / {100 * lo['link_fraction']:.1f} % "
                  f"| {ratio:.3f} |", file=out)
    print(file=out)
    for size, ratios in sorted(by_size.items()):
        ratios.sort()
        print(f"{mib(size)}: larger window's time / smaller's, {len(ratios)} cells: "
              f"{ratios[0]:.3f} … {ratios[-1]:.3f}, median {ratios[len(ratios) // 2]:.3f}", file=out)


def main(argv):
    try:
        return run(argv)
    except Bad as e:
        print("netbench_plot.py:", e, file=sys.stderr)
        return 2


def run(argv):
    if len(argv) == 3 and argv[1] == "--table":
        table(load(argv[2]))
    elif len(argv) == 3 and argv[1] == "--times":
        times(load(argv[2]))
    elif len(argv) in (3, 4) and argv[1] == "--goals":
        goals(load(argv[2]), load(argv[3]) if len(argv) == 4 else None)
    elif len(argv) == 3 and argv[1] == "--slots":
        slots(load(argv[2]))
    elif len(argv) == 3 and argv[1] == "--check":
        return 0 if check(load(argv[2])) else 1
    elif len(argv) == 4 and argv[1] == "--check":
        return 0 if check(load(argv[2]), argv[3].split(",")) else 1
    elif len(argv) == 3:
        folder = os.path.dirname(os.path.abspath(argv[2]))
        if not os.path.isdir(folder):
            raise Bad(f"{argv[2]}: no folder {folder}")
        plot(load(argv[1]), argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
