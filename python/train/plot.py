"""Draws scripts/train's results: DIR/curves.png (validation loss and replica drift against step,
mean over seeds, one panel pair per task) and DIR/table.md (the table docs/training.md shows).

    python3 python/train/plot.py DIR
"""
import csv
import json
import os
import re
import sys
from collections import defaultdict


def load(folder):
    with open(os.path.join(folder, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("c", "seed", "step"):
            r[k] = int(r[k])
        for k in ("val_loss", "seconds", "bytes_sent", "max_replica_diff"):
            r[k] = float(r[k])
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    return rows, summary


def label(method, c, control):
    name = "control" if method in ("control", control) else method
    return name if method == "exact" else "%s, c=%d" % (name, c)


def table(summary):
    control = summary["control"]
    lines = ["| task | optimizer | method | c | seeds | final val loss (mean ± std) | min - max "
             "| max replica diff (worst step) | bytes/step | vs exact ring |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary["results"]:
        method = "control" if s["method"] == control else s["method"]
        ratio = "%.3f" % s["bytes_vs_ring"] if s["bytes_vs_ring"] is not None else "-"
        lines.append("| %s | %s | %s | %s | %d | %.4f ± %.4f | %.4f - %.4f | %.2e | %.0f | %s |" % (
            s["task"], s["optimizer"], method, s["c"] or "-", len(s["seeds"]), s["val_loss_mean"],
            s["val_loss_std"], s["val_loss_min"], s["val_loss_max"], s["max_replica_diff"],
            s["bytes_per_step"], ratio))
    lines.append("")
    lines.append("N = %d, %s transport; control = %s; %s" % (
        summary["N"], summary["transport"], control,
        " ".join("--%s %s" % (k.replace("_", "-"), v) for k, v in summary["args"].items()
                 if k in ("tasks", "methods", "c", "seeds", "steps") or
                 (k == "accumulation" and v != "buffer"))))
    return "\n".join(lines) + "\n"


def main(folder):
    rows, summary = load(folder)
    text = table(summary)
    tmp = os.path.join(folder, "table.md.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(folder, "table.md"))
    sys.stdout.write(text)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r["task"] for r in rows})
    fig, axes = plt.subplots(2, len(tasks), figsize=(6 * len(tasks), 8), squeeze=False)
    for col, task in enumerate(tasks):
        curves = defaultdict(lambda: defaultdict(list))
        for r in rows:
            if r["task"] == task:
                key = label(r["method"], r["c"], summary["control"])
                curves[key][r["step"]].append(r)
        for key in sorted(curves):
            steps = sorted(curves[key])
            loss = [sum(x["val_loss"] for x in curves[key][s]) / len(curves[key][s]) for s in steps]
            drift = [max(x["max_replica_diff"] for x in curves[key][s]) for s in steps]
            style = "-" if key == "exact" else ("--" if key.startswith("cerar") else "-.")
            axes[0][col].plot(steps, loss, style, label=key)
            axes[1][col].plot(steps, [max(d, 1e-9) for d in drift], style, label=key)
        opt = next(r["optimizer"] for r in rows if r["task"] == task)
        axes[0][col].set_title("%s (%s): validation loss, mean over seeds" % (task, opt))
        axes[0][col].set_xlabel("step")
        axes[0][col].legend(fontsize=8)
        tau = re.search(r"probe\d+@([0-9.eE+-]+)", summary["control"])
        if tau:  # docs/training.md section 4: the bound B = 2 tau
            axes[1][col].axhline(2 * float(tau.group(1)), ls=":", color="k", lw=1,
                                 label="bound B = %g" % (2 * float(tau.group(1))))
        axes[1][col].set_title("%s: max |p_i - p_j|, worst seed and step since the last point"
                               % task)
        axes[1][col].set_yscale("log")
        axes[1][col].set_xlabel("step")
        axes[1][col].legend(fontsize=8)
    fig.tight_layout()
    tmp = os.path.join(folder, "curves.tmp.png")
    fig.savefig(tmp, dpi=90)
    os.replace(tmp, os.path.join(folder, "curves.png"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py DIR")
    main(sys.argv[1])
