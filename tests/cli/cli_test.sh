#!/usr/bin/env bash
# End-to-end checks of the cerar CLI. Usage: cli_test.sh CERAR READ_DESIGN_PY
# Prints one line per check and "N passed, M failed" at the end; exits non-zero on any failure.
set -uo pipefail
cerar=$1
reader=$2
source "$(dirname "$0")/harness.sh"

# expect_error NAME EXPECTED_WORDS -- ARGS: exit code 2, exactly one line on stderr naming the words.
expect_error() {
  local name=$1 words=$2; shift 3
  "$cerar" "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -eq 2 && $lines -eq 1 ]] && grep -qi -- "$words" "$work/err"; then
    ok "$name (exit 2: $(cat "$work/err"))"
  else
    bad "$name: exit $rc, $lines stderr lines, expected exit 2 and one line with '$words': $(cat "$work/err")"
  fi
}

# The happy path: design -> file -> validate -> report -> simulate.
f=$work/d.json
if "$cerar" design -N 4 -c 8 --construction eps --eps 1e-3 -o "$f" >"$work/out" 2>&1 && [[ -s $f ]]; then
  ok "design writes a file"
else
  bad "design -N 4 -c 8 --eps 1e-3 -o FILE: $(cat "$work/out")"
fi
if "$cerar" validate "$f" >"$work/out" 2>&1 && grep -q '^valid$' "$work/out"; then
  ok "validate accepts a fresh design"
else
  bad "validate: $(cat "$work/out")"
fi
if python3 "$reader" "$f" >/dev/null 2>&1; then ok "python reader verifies the file"; else bad "python reader"; fi

"$cerar" report "$f" --json >"$work/report.json"
if python3 - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("err_op", "err_rms", "kappa_dec", "kappa_enc", "L", "N", "c", "precision"):
    assert k in r, k
assert r["N"] == 4 and r["c"] == 8 and r["L"] == 10
# PROTOCOL.md §7: eps, N = 4, c = 8, eps = 1e-3
assert abs(r["err_op"] / 1.63e-3 - 1) < 0.01, r["err_op"]
assert abs(r["err_rms"] / 8.16e-4 - 1) < 0.01, r["err_rms"]
assert abs(r["kappa_dec"] / 1.41e3 - 1) < 0.01, r["kappa_dec"]
PY
then ok "report --json carries the §5 figures (§7 values)"; else bad "report --json"; fi

"$cerar" sweep -N 4 -c 8 --construction eps --eps-from 1e-4 --eps-to 1e-2 --points 5 --csv >"$work/sweep.csv"
if [[ $(head -1 "$work/sweep.csv") == construction,N,c,eps,err_op,err_rms,* && $(wc -l <"$work/sweep.csv") -eq 6 ]]; then
  ok "sweep --csv: header + 5 points"
else
  bad "sweep --csv: $(cat "$work/sweep.csv")"
fi

"$cerar" simulate "$f" --count 20011 --dtype f64 --json >"$work/sim.json"
if python3 - "$work/sim.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("measured_err_rms", "recorded_err_rms", "bytes_sent_per_rank", "ring_bytes_sent_per_rank",
          "workspace_bytes", "seconds"):
    assert k in r, k
m = -(-20011 // 8)
assert r["bytes_sent_per_rank"] == 10 * m * 8, r["bytes_sent_per_rank"]  # L * ceil(n/c) * 8
assert abs(r["measured_err_rms"] / r["recorded_err_rms"] - 1) < 0.03  # seeds 1-5: within 1.1 %
PY
then ok "simulate --json: keys, exact bytes, error within 3% of err_rms"; else bad "simulate --json: $(cat "$work/sim.json")"; fi

# Certified high precision (docs/error-model.md): vandermonde N = 4, eps = 1e-2, c = 16 has
# kappa_dec 1.16e39; its exact figures are certified and right (scripts/reference-figures.py).
v=$work/v16.json
if "$cerar" design -N 4 -c 16 --construction vandermonde --eps 1e-2 -o "$v" >"$work/out" 2>&1 &&
   grep -q "certified digits: err_op 15" "$work/out" && "$cerar" report "$v" --json >"$work/v.json" &&
   python3 - "$work/v.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["exact_figures"]
assert abs(e["err_op"] / 0.032874339215044454608 - 1) < 1e-6, e["err_op"]
assert abs(e["kappa_dec"] / 1.1578681632446351364e39 - 1) < 1e-2, e["kappa_dec"]
assert min(e["certified_digits"].values()) >= 10 and min(r["certified_digits"].values()) >= 10
assert r["parameters"]["certified_digits"] >= 10 and r["parameters"]["certified_against"]
PY
then ok "design/report: kappa 1.16e39 as a number, certified digits in text and JSON"
else bad "certified vandermonde c = 16: $(cat "$work/out")"; fi
# Its stored matrices are destroyed by rounding to float64 (the note says so), and nothing but
# the note said it; the eps design above is fine in float64 and unusable only in bfloat16.
if grep -q "^warning     err_op .* > 1: for some inputs the error is larger" "$work/out" &&
   python3 - "$work/v.json" "$work/report.json" <<'PY'
import json, sys
v, eps = (json.load(open(p)) for p in sys.argv[1:3])
assert v["err_op"] > 1 and any(w.startswith("err_op ") for w in v["warnings"]), v["warnings"]
assert eps["warnings"] == [w for w in eps["warnings"] if w.startswith("predicted error >= 1 in bfloat16 ")]
assert len(eps["warnings"]) == 1 and eps["predicted_error"]["bfloat16"] >= 1, eps["warnings"]
assert eps["exact_figures"]["warnings"] == [] if "exact_figures" in eps else True
PY
then ok "report warns of err_op > 1 and of arithmetics whose predicted error is >= 1, and only of them"
else bad "report warnings: $(grep warning "$work/out")"; fi
if "$cerar" validate "$v" >"$work/out" 2>&1 && grep -q '^valid$' "$work/out" &&
   grep -q "exact_figures.kappa_dec" "$work/out"; then
  ok "validate re-derives the exact figures too"
else
  bad "validate of the certified file: $(cat "$work/out")"
fi
# A falsified predicted_error, re-signed (integrity recomputed), fails validate.
python3 - "$v" "$work/falsified.json" "$reader" <<'PY'
import json, sys, importlib.util
spec = importlib.util.spec_from_file_location("read_design", sys.argv[3])
rd = importlib.util.module_from_spec(spec); spec.loader.exec_module(rd)
doc = json.load(open(sys.argv[1]))
doc["figures"]["predicted_error"]["float32"] *= 1.001
doc["integrity"] = rd.integrity_value(doc)
json.dump(doc, open(sys.argv[2], "w"))
PY
expect_error "re-signed falsified predicted_error" "predicted_error\[float32\]" -- validate "$work/falsified.json"
# A figure of +inf (a singular matrix's kappa) is "inf" in report --json, as in the file: JSON has
# no infinity, and nlohmann would write null.
python3 - "$v" "$work/infinite.json" "$reader" <<'PY'
import json, sys, importlib.util
spec = importlib.util.spec_from_file_location("read_design", sys.argv[3])
rd = importlib.util.module_from_spec(spec); spec.loader.exec_module(rd)
doc = json.load(open(sys.argv[1]))
doc["figures"]["kappa_dec"] = "inf"
doc["figures"]["kappa_dec_per_rank"][1] = "inf"
doc["integrity"] = rd.integrity_value(doc)
json.dump(doc, open(sys.argv[2], "w"))
PY
if "$cerar" report "$work/infinite.json" --json >"$work/out" 2>&1 &&
   python3 -c 'import json, sys; j = json.load(open(sys.argv[1]))
assert j["kappa_dec"] == "inf" and j["per_rank"]["kappa_dec"][1] == "inf", j["kappa_dec"]
assert isinstance(j["per_rank"]["kappa_dec"][0], float)' "$work/out"; then
  ok "report --json writes an infinite figure as \"inf\""
else
  bad "report --json of an infinite figure: $(head -c 300 "$work/out")"
fi
expect_error "float64 refused: singular in float64" "rank j = 0.*singular in float64.*--precision auto or mp" -- design -N 4 -c 11 --construction vandermonde --eps 1e-2 --precision float64
expect_error "float64 refused: figures untrusted" "float64 cannot be trusted here: kappa_dec of rank 1 is 2.99e+14" -- design -N 4 -c 16 --eps 1e-5 --precision float64
expect_error "too ill-conditioned, not singular" "too ill-conditioned for 100 digits (kappa_dec ≈ 8.4e+59).*raise the digit limit to 200 (cerar --max-digits, Python max_digits)" -- design -N 4 -c 24 --construction vandermonde --eps 1e-2 --max-digits 100
# mp400 runs but finds kappa = +inf: the message must not also say that mp400 resolves the decoders.
expect_error "singular at the top rung, not resolved" "too ill-conditioned for 400 digits (kappa_dec beyond what mp400 resolves): mp400 finds them singular to its working precision and no other precision resolves them (mp200: numerical rank 4 < c = 8" -- design -N 4 -c 8 --eps 1e-300
expect_error "max digits below 50" "max digits 20" -- design -N 4 -c 8 --eps 1e-3 --max-digits 20

# Bad arguments: one line, exit 2.
expect_error "N < 2" "N = 1" -- design -N 1 -c 4 --eps 1e-3
expect_error "c < 1" "c = 0" -- design -N 4 -c 0 --eps 1e-3
expect_error "eps < 0" "--eps -1: eps must be finite and >= 0" -- design -N 4 -c 8 --eps -1
expect_error "eps NaN" "--eps nan: eps must be finite and >= 0" -- design -N 4 -c 8 --eps nan
expect_error "absurd N" "N = 1000000000" -- design -N 1000000000 -c 8 --eps 1e-3
expect_error "unknown construction" "--construction 'magic' is not one of eps, vandermonde, optimized" -- design -N 4 -c 8 --construction magic --eps 1e-3
expect_error "no eps nor tune" "--eps" -- design -N 4 -c 8
expect_error "unknown option" "--frobnicate" -- design -N 4 -c 8 --eps 1e-3 --frobnicate
expect_error "unwritable output" "does not exist" -- design -N 4 -c 8 --eps 1e-3 -o "$work/no/such/dir/x.json"
expect_error "missing file" "missing.json" -- report "$work/missing.json"
expect_error "bad sweep range" "need 0 < --eps-from <= --eps-to, finite; got 0.01 and 0.0001" -- sweep -N 4 -c 8 --eps-from 1e-2 --eps-to 1e-4 --points 3
expect_error "bad dtype" "--dtype 'f16' must be f32 or f64" -- simulate "$f" --dtype f16
expect_error "negative count" "--count -5 must be >= 0" -- simulate "$f" --count -5
expect_error "bad accumulation" "--accumulate 'f32' must be buffer, f64, f64+feedback or f64-state" -- simulate "$f" --accumulate f32
expect_error "negative continuation" "optimizer options: --continuation-from -5, expected" -- design --construction optimized -N 4 -c 8 --kappa-max 1e3 --continuation-from -5
expect_error "negative L-BFGS memory" "--lbfgs-memory -3, expected >= 0 (0: NLopt.s heuristic) or -1 (auto)" -- design --construction optimized -N 4 -c 8 --kappa-max 1e3 --lbfgs-memory -3
expect_error "continuation not finite" "pareto options: --continuation-from nan" -- pareto -N 4 -c 8 --kappa 1e2 --continuation-from nan
expect_error "optimized without a bound or a target" "--kappa-max VALUE or --tune" -- design --construction optimized -N 4 -c 8
expect_error "optimized with a bound below 1" "--kappa-max 0.5, expected a finite value >= 1" -- design --construction optimized -N 4 -c 8 --kappa-max 0.5
expect_error "tune and objective" "--objective" -- design --construction optimized -N 4 -c 8 --tune float32 --objective op
# The optimiser's options with another construction: refused, not ignored (the design once came
# out with kappa_dec 1.4e3 against --kappa-max 10).
expect_error "optimiser option with eps" "--kappa-max is an option of --construction optimized, not of eps" -- design -N 4 -c 8 --eps 1e-3 --kappa-max 10
expect_error "optimiser option with --tune" "--time-limit is an option of --construction optimized" -- design -N 4 -c 8 --tune float32 --time-limit 5
expect_error "optimiser flag with vandermonde" "--per-rank is an option of --construction optimized, not of vandermonde" -- design -N 4 -c 8 --construction vandermonde --eps 1e-2 --per-rank
expect_error "optimized with --kappa-max inf" "--kappa-max inf, expected a finite bound >= 1" -- design --construction optimized -N 3 -c 3 --kappa-max inf
expect_error "unknown command" "unknown command 'desing'; expected one of design, validate" -- desing -N 4 -c 8
expect_error "pareto N < 2" "pareto options: -N 1, expected N >= 2" -- pareto -N 1 -c 4 --no-optimize --points 2 --kappa 1e2:1e3
# The library's Validate() names its fields; the CLI says them as the flags the user typed.
expect_error "optimiser time limit" "optimizer options: --time-limit -1, expected a finite value > 0" -- design --construction optimized -N 4 -c 8 --kappa-max 1e3 --time-limit -1
expect_error "pareto points" "pareto options: --points 3000, expected 1 .. 1000" -- pareto -N 4 -c 8 --kappa 1e2:1e3 --points 3000
expect_error "pareto kappa range" "pareto options: --kappa 1000:100, expected" -- pareto -N 4 -c 8 --kappa 1e3:1e2 --points 3
expect_error "pareto without any design" "no design meets" -- pareto -N 4 -c 4 --no-optimize --points 2 --kappa 1.1:1.2
# Columns a run does not compute are "-" in the table and empty in the CSV, never "nan".
if table=$("$cerar" pareto -N 4 -c 8 --no-optimize --points 2 --kappa 1e2:1e3) &&
   csv=$("$cerar" pareto -N 4 -c 8 --no-optimize --points 2 --kappa 1e2:1e3 --csv) &&
   ! grep -qi nan <<<"$table$csv" && [[ $(sed -n 2p <<<"$table" | awk '{print $5, $8}') == "- -" ]] &&
   [[ $(sed -n 2p <<<"$csv" | cut -d, -f9-14) == ",,,,," ]]; then
  ok "pareto --no-optimize: uncomputed columns are '-' and empty"
else
  bad "pareto --no-optimize columns: $table $csv"
fi

# A design optimised for float32 is simulated before it is written (docs/optimizer.md §7).
if "$cerar" design --construction optimized --tune float32 -N 3 -c 6 --max-evaluations 300 \
     -o "$work/opt.json" >/dev/null 2>&1 && python3 - "$reader" "$work/opt.json" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("read_design", sys.argv[1])
rd = importlib.util.module_from_spec(spec); spec.loader.exec_module(rd)
d = rd.load(sys.argv[2])
p = d["provenance"]["parameters"]
assert d["provenance"]["construction"] == "optimized"
assert p["objective"] == "predicted" and p["target"] == "float32", p["objective"]
assert p["variables"] == "per_rank_encoders", p["variables"]
check = p["simulation_check"]
assert check["run"] and check["dtype"] == "f32", check
assert 0.8 <= check["measured_error"] / d["figures"]["predicted_error"]["float32"] <= 1.2, check
PY
then ok "design --construction optimized --tune float32: simulated within 20 % before writing"; else bad "optimized --tune float32"; fi

# --max-digits bounds the optimiser's high-precision re-analysis as it does a construction's:
# 50 digits is one rung, uncertified (it was once ignored for --construction optimized).
if "$cerar" design --construction optimized -N 4 -c 8 --kappa-max 1e2 --max-evaluations 100 \
     --max-digits 50 -o "$work/opt50.json" >/dev/null 2>&1 && python3 - "$reader" "$work/opt50.json" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("read_design", sys.argv[1])
rd = importlib.util.module_from_spec(spec); spec.loader.exec_module(rd)
d = rd.load(sys.argv[2])
assert d["figures"]["precision"] == "mp50", d["figures"]["precision"]
assert not d["figures"].get("certified_digits"), d["figures"].get("certified_digits")
assert d["provenance"]["parameters"]["analysis"]["max_digits"] == 50
PY
then ok "design --construction optimized --max-digits 50: one rung, recorded"; else bad "optimized --max-digits 50"; fi
expect_error "optimized with too few digits" "--max-digits 20, expected 50" -- design --construction optimized -N 4 -c 8 --kappa-max 1e3 --max-digits 20

# A corrupted file is rejected by validate and report, naming the file.
sed 's/"N": 4/"N": 5/' "$f" >"$work/edited.json"
expect_error "edited file" "edited.json" -- validate "$work/edited.json"
head -c 500 "$f" >"$work/truncated.json"
expect_error "truncated file" "truncated.json" -- report "$work/truncated.json"

# A failed write leaves nothing behind and an existing file untouched.
cp "$f" "$work/keep.json"
before=$(sha256sum <"$work/keep.json")
"$cerar" design -N 1 -c 4 --eps 1e-3 -o "$work/keep.json" >/dev/null 2>&1
if [[ $(sha256sum <"$work/keep.json") == "$before" && $(ls "$work" | grep -c '\.tmp') -eq 0 ]]; then
  ok "failed design leaves the existing file untouched, no temporary"
else
  bad "failed design changed the file or left a temporary: $(ls "$work")"
fi

finish
