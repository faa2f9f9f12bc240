#!/usr/bin/env bash
# cerar-bench --accumulation buffer,f64-state on one design: one CERAR row per accumulation, each
# named for it, with the same bytes as the traffic model, the design's predicted error for that
# arithmetic (read here from the file: "float32", "float32+state64"), a measured error within
# 25 % of it, and float64 state below the buffer's. The exact ring stays on buffer arithmetic.
#   bench_accumulation.sh PYTHON DESIGN OUTDIR MPIEXEC... BENCH
set -euo pipefail
python=$1 design=$2 out=$3
shift 3
mkdir -p "$out"
csv=$out/bench_accumulation.csv
rm -f "$csv"
"$@" --design "$design" --sizes 256KiB --reps 1 --algorithms cerar,ring \
  --accumulation buffer,f64-state --csv "$csv"
"$python" - "$csv" "$design" <<'PY'
import csv, json, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
stem = os.path.basename(sys.argv[2])[:-len(".json")]
figures = json.load(open(sys.argv[2]))["figures"]["predicted_error"]
bad = []
by = {(r["algorithm"], r["design"]): r for r in rows}
want = {"buffer": "float32", "f64-state": "float32+state64"}
err = {}
for acc, arithmetic in want.items():
    r = by.get(("cerar", stem + "/" + acc))
    if r is None:
        bad.append("no CERAR row %s/%s in %s" % (stem, acc, sorted(by)))
        continue
    if r["accumulation"] != acc:
        bad.append("%s: accumulation column %r" % (acc, r["accumulation"]))
    if r["bytes_sent_per_rank"] != r["expected_bytes_per_rank"] or not r["bytes_sent_per_rank"]:
        bad.append("%s: %s bytes sent, model %s" % (acc, r["bytes_sent_per_rank"],
                                                     r["expected_bytes_per_rank"]))
    pred = float(r["predicted_error"]) if r["predicted_error"] else None
    if pred is None or abs(pred / figures[arithmetic] - 1) > 1e-6:
        bad.append("%s: predicted_error %s, the file's %s figure is %g" % (
            acc, pred, arithmetic, figures[arithmetic]))
        continue
    err[acc] = float(r["rel_error"])
    if abs(err[acc] / pred - 1) > 0.25:
        bad.append("%s: measured %.3e, predicted %.3e (25 %%)" % (acc, err[acc], pred))
if len(err) == 2 and not err["f64-state"] < err["buffer"]:
    bad.append("f64-state error %.3e not below buffer's %.3e" % (err["f64-state"], err["buffer"]))
if len({by[k]["bytes_sent_per_rank"] for k in by if k[0] == "cerar"}) != 1:
    bad.append("the accumulations sent different bytes")
ring = by.get(("ring", ""))
if ring is None or ring["accumulation"] != "buffer" or float(ring["rel_error"]) > 1e-6:
    bad.append("ring row: %s" % ring)
for b in bad:
    print("FAILED:", b)
if bad:
    sys.exit(1)
print("bench accumulation: ok (error buffer %.3e, f64-state %.3e)" % (err["buffer"],
                                                                      err["f64-state"]))
PY
