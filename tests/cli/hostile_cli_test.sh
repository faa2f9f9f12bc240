#!/usr/bin/env bash
# Hostile arguments and files against the cerar CLI (issue 14): every one ends in exactly one
# escaped line on stderr and exit code 2, leaves no partial file, and never crashes.
# Usage: hostile_cli_test.sh CERAR REPO_ROOT [--sanitized]
# (--sanitized: skip the checks that need address-space limits, which AddressSanitizer cannot run
# under.)
set -uo pipefail
cerar=$1
root=$2
sanitized=${3:-}
source "$(dirname "$0")/harness.sh"

# expect_error NAME WORDS -- ARGS: exit 2, one stderr line holding WORDS, no control characters.
expect_error() {
  local name=$1 words=$2; shift 3
  "$cerar" "$@" >"$work/out" 2>"$work/err"
  check_error "$name" "$words" $?
}
check_error() {
  local name=$1 words=$2 rc=$3 lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -eq 2 && $lines -eq 1 ]] && grep -qF -- "$words" "$work/err" &&
     ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$work/err"; then
    ok "$name (exit 2: $(cat "$work/err"))"
  else
    bad "$name: exit $rc, $lines stderr lines, expected exit 2 and one line with '$words': $(cat -v "$work/err")"
  fi
}

f=$work/d.json
"$cerar" design -N 4 -c 8 --eps 1e-3 -o "$f" >/dev/null || bad "design for the checks"

# --- Arguments (defect 11).
expect_error "empty --eps" "--eps: empty value" -- design -N 4 -c 8 --eps ""
expect_error "empty -N" "empty value" -- design -N "" -c 8 --eps 1e-3
expect_error "negative --seed (simulate)" "non-negative integer" -- simulate "$f" --seed -1 --count 8
expect_error "negative --seed (design)" "non-negative integer" -- \
  design -N 4 -c 8 --construction optimized --kappa-max 1e3 --seed -1
expect_error "--seed 2^64" "expected an integer <= 18446744073709551615, got 18446744073709551616" -- \
  simulate "$f" --seed 18446744073709551616 --count 8
expect_error "--count 2^63" "expected an integer <= 9223372036854775807, got 9223372036854775808" -- \
  simulate "$f" --count 9223372036854775808
# Integers are decimal: CLI11 alone reads 010 as octal 8.
[[ $("$cerar" simulate "$f" --seed 010 --count 8 | grep -o 'seed [0-9]*') == "seed 10" &&
   $("$cerar" design -N 010 -c 10 --eps 1e-3 | head -1) == *"(N = 10, c = 10)"* ]] &&
  ok "leading zeros are decimal" || bad "leading zeros: $("$cerar" simulate "$f" --seed 010 --count 8 2>&1 | head -1)"
expect_error "bad --timeout" "--timeout 0" -- --timeout 0 report "$f"
expect_error "bad --max-file-mib" "--max-file-mib" -- report "$f" --max-file-mib 0

# --- Sizes (defect 3): refused up front, naming --count and the bytes.
expect_error "count 2^62" "--count 4611686018427387904 (f32, N = 4, c = 8) needs more than 2^64 bytes" -- \
  simulate "$f" --count 4611686018427387904
# SimulateMemoryBytes by hand: per rank 2·n·4 (input, working copy) + (L + 2)·(n/c)·4 (workspace)
# + 2·K·1 MiB (send slots and the incoming link's queue, K = kDefaultSendSlots = 8); N = 4 ranks
# plus 16 bytes of exact sum per element: 4·(8e11 + 6e11 + 16 MiB) + 1.6e12 = 7.2e12 + 64 MiB.
expect_error "count 1e11" "--count 100000000000 (f32, N = 4, c = 8) needs 7.2e+03 GB (7200067108864 bytes)" -- \
  simulate "$f" --count 100000000000
if [[ -z $sanitized ]]; then
  (ulimit -v 4000000; "$cerar" simulate "$f" --count 300000000 >"$work/out" 2>"$work/err")
  # 4·(2.4e9 + 1.8e9 + 16 MiB) + 4.8e9 = 21.667e9 bytes.
  check_error "count 3e8 under a 4 GB limit" "--count 300000000 (f32, N = 4, c = 8) needs 21.7 GB" $?
  # Thread creation failure (defect 4): N = 200 ranks under 1 GB of address space.
  "$cerar" design -N 200 -c 1 --eps 0 --precision float64 -o "$work/n200.json" >/dev/null
  (ulimit -v 1000000; "$cerar" simulate "$work/n200.json" --count 1000 >"$work/out" 2>"$work/err")
  check_error "N = 200 threads under 1 GB" "in-process transport: cannot start the thread of rank" $?
  # GMP (the high-precision analysis) out of memory once printed "GNU MP: Cannot allocate memory"
  # and aborted (exit 134). Under each limit: the design, or the one line. The limits where it
  # runs out depend on the machine, so at least one must run out.
  ran_out=0
  for kib in 30000 40000 50000; do
    (ulimit -v $kib; "$cerar" design -N 8 -c 24 --eps 1e-3 --precision mp50 >"$work/out" 2>"$work/err")
    rc=$?
    if [[ $rc -ne 0 ]]; then
      check_error "mp50 analysis under $kib KiB" "out of memory" $rc
      ran_out=1
    fi
  done
  [[ $ran_out -eq 1 ]] && ok "some limit ran out of memory" || bad "no limit from 30000 KiB ran out"
fi

# --- Output files (defects 8, 11): never replaced unless regular, and only with --force.
"$cerar" design -N 4 -c 8 --eps 1e-3 -o "$work/exists.json" >/dev/null
before=$(sha256sum <"$work/exists.json")
expect_error "existing output without --force" "exists; pass --force" -- \
  design -N 4 -c 8 --eps 2e-3 -o "$work/exists.json"
[[ $(sha256sum <"$work/exists.json") == "$before" ]] && ok "existing file untouched" || bad "existing file changed"
if "$cerar" design -N 4 -c 8 --eps 2e-3 -o "$work/exists.json" --force >/dev/null &&
   [[ $(sha256sum <"$work/exists.json") != "$before" ]]; then
  ok "--force replaces a regular file"
else
  bad "--force did not replace the file"
fi
mkfifo "$work/fifo"
ln -s "$work/exists.json" "$work/link"
expect_error "FIFO output" "not a regular file (a FIFO, device or socket)" -- \
  design -N 4 -c 8 --eps 1e-3 -o "$work/fifo" --force
expect_error "symlink output" "not a regular file (a symbolic link)" -- \
  sweep -N 4 -c 8 --points 2 -o "$work/link" --force
[[ -p $work/fifo && -L $work/link ]] && ok "FIFO and link still there" || bad "FIFO or link replaced"
long=$work/$(printf 'n%.0s' {1..250})
if "$cerar" design -N 4 -c 8 --eps 1e-3 -o "$long" >/dev/null && [[ -s $long ]]; then
  ok "250-character output name"
else
  bad "250-character output name"
fi
[[ $(ls "$work" | grep -c '\.tmp\.') -eq 0 ]] && ok "no temporary left" || bad "temporary left: $(ls "$work")"

# --- Standard output that cannot be written (defect 11).
"$cerar" report "$f" >/dev/full 2>"$work/err"
check_error "report > /dev/full" "cannot write to standard output (No space left on device)" $?
# design -o F whose report cannot be written: exit 2 and no F (it once wrote F, then failed, and a
# rerun without --force refused to replace the file of the "failed" run); -o F --json alike.
for fmt in text json; do
  extra=(); [[ $fmt == json ]] && extra=(--json)
  "$cerar" design -N 4 -c 8 --eps 1e-3 -o "$work/full.json" "${extra[@]}" >/dev/full 2>"$work/err"
  check_error "design -o F ($fmt) > /dev/full" "cannot write to standard output (No space left on device)" $?
  [[ ! -e $work/full.json ]] && ok "design -o F ($fmt) > /dev/full leaves no F" ||
    { bad "design -o F ($fmt) > /dev/full left F"; rm -f "$work/full.json"; }
done

# --- Terminal injection (defect 10): paths and arguments are escaped.
expect_error "escaped path" 'design file '"$work"'/a\x1b[31mred\nx: cannot open' -- \
  report "$work/a"$'\e[31mred\nx'
expect_error "escaped option" 'not expected: --\x1b[2J' -- design -N 4 -c 8 --eps 1e-3 $'--\e[2J'

# --- Non-finite designs (defect 11): entries of 1e308 are finite but overflow the sums.
# edit_and_sign IN OUT PYTHON_STATEMENT: a validly signed copy of IN with `d` edited.
edit_and_sign() {
  /usr/bin/python3 - "$1" "$2" "$root/scripts" "$3" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import read_design
d = json.load(open(sys.argv[1]))
exec(sys.argv[4])
d["integrity"] = read_design.integrity_value(d)
json.dump(d, open(sys.argv[2], "w"))
PY
}
edit_and_sign "$f" "$work/big.json" \
  'd["encoders"] = [[[1e308 if v else 0.0 for v in row] for row in m] for m in d["encoders"]]'
expect_error "1e308 entries, f32" "has an entry of magnitude 1e+308, beyond f32's largest finite value" -- simulate "$work/big.json" --count 1000
expect_error "1e308 entries, f64" "overflow f64 arithmetic" -- simulate "$work/big.json" --count 1000 --dtype f64

# A design without figures: report names the file and what writes figures (it once said "run
# cerar validate", which refuses such a file); simulate says none is recorded, not "nan".
edit_and_sign "$f" "$work/nofigures.json" 'd.pop("figures")'
expect_error "report without figures" "design file $work/nofigures.json: no figures recorded" -- report "$work/nofigures.json"
"$cerar" simulate "$work/nofigures.json" --count 100 >"$work/out" 2>"$work/err" &&
  grep -q "design's err_rms none recorded" "$work/out" && ! grep -qi nan "$work/out" &&
  ok "simulate without figures" || bad "simulate without figures: $(cat "$work/out" "$work/err")"

# A signed file whose text carries terminal escapes: report's output shows them escaped, and an
# "eps" that is not a number is left out instead of failing.
edit_and_sign "$f" "$work/escapes.json" \
  'd["notes"] = ["\x1b]0;pwned\x07 note"]; d["provenance"]["construction"] = "\x1b[2Jeps"; d["provenance"]["parameters"]["eps"] = "x"'
if "$cerar" report "$work/escapes.json" >"$work/out" 2>"$work/err" &&
   ! LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$work/out" && grep -qF 'note        \x1b]0;pwned\x07 note' "$work/out"; then
  ok "report escapes the file's text"
else
  bad "report of a file with escapes: $(cat -v "$work/out" "$work/err")"
fi

# --- --timeout: stops a long command with the one line, writes nothing.
expect_error "--timeout" "stopped by --timeout 1 s" -- \
  design -N 16 -c 64 --tune float32 -o "$work/slow.json" --timeout 1
[[ ! -e $work/slow.json && $(ls "$work" | grep -c '\.tmp\.') -eq 0 ]] &&
  ok "--timeout left no file" || bad "--timeout left a file"
# A timeout past the clock's range (now + 1e10 s overflows it) once stopped the command at once.
"$cerar" --timeout 1e10 report "$f" >/dev/null 2>"$work/err" &&
  ok "--timeout 1e10 lets a quick command finish" || bad "--timeout 1e10: $(cat "$work/err")"

# --- Up-front cost estimates (defect 11): a long analysis says so, an impossible one is refused.
"$cerar" validate "$root/matrices/eps_N2_c8.json" --timeout 60 >/dev/null 2>"$work/err" &&
  [[ ! -s $work/err ]] && ok "a quick command prints no estimate" || bad "quick validate: $(cat "$work/err")"
"$cerar" design -N 2 -c 512 --eps 1e-3 --precision mp50 --timeout 1 >/dev/null 2>"$work/err"
rc=$?
if [[ $rc -eq 2 ]] && grep -q "^cerar: note: design -N 2 -c 512 is estimated to take about" "$work/err" &&
   grep -q "^cerar: stopped by --timeout 1 s" "$work/err"; then
  ok "estimate and --timeout for N = 2, c = 512 in mp50"
else
  bad "estimate for N = 2, c = 512: exit $rc, $(cat "$work/err")"
fi
# pareto had no estimate: six budgets of a 60 s search each ran for minutes in silence.
"$cerar" pareto -N 8 -c 16 --kappa 1e1:1e6 --points 6 --timeout 1 >/dev/null 2>"$work/err"
rc=$?
if [[ $rc -eq 2 ]] &&
   grep -q "^cerar: note: pareto of 6 budgets at N = 8, c = 16 is estimated to take about [0-9]* min" "$work/err" &&
   grep -q "^cerar: stopped by --timeout 1 s" "$work/err"; then
  ok "estimate and --timeout for a pareto front"
else
  bad "estimate for pareto: exit $rc, $(cat "$work/err")"
fi
if [[ -z $sanitized ]]; then
  (ulimit -v 8000000; "$cerar" design -N 11585 -c 1 --eps 1e-3 -o "$work/huge.json" >"$work/out" 2>"$work/err")
  check_error "design -N 11585 -c 1 under 8 GB" "design -N 11585 -c 1 needs about 18.8 GB of memory" $?
fi

# --- The file size limit (defect 5) and its override.
big_size=$(stat -c %s "$root/matrices/eps_N16_c48.json")  # the size the message must name
(( big_size > 1048576 && big_size <= 2097152 )) ||
  bad "matrices/eps_N16_c48.json is $big_size bytes; this check needs 1 to 2 MiB"
expect_error "file above --max-file-mib" "$big_size bytes, above the limit of 1048576" -- \
  report "$root/matrices/eps_N16_c48.json" --max-file-mib 1
"$cerar" report "$root/matrices/eps_N16_c48.json" --max-file-mib 2 >/dev/null &&
  ok "--max-file-mib raises the limit" || bad "--max-file-mib 2"

# --- Every hostile file of the fuzzer's regression corpus, through every reading command.
for file in "$root"/tests/fuzz/regression/*; do
  for command in validate report simulate; do
    "$cerar" "$command" "$file" >"$work/out" 2>"$work/err"
    rc=$?
    if [[ $rc -ne 2 || $(wc -l <"$work/err") -ne 1 ]] ||
       LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$work/err"; then
      bad "$command $(basename "$file"): exit $rc, $(cat -v "$work/err")"
    fi
  done
done
ok "regression corpus: validate, report, simulate each refuse every file with one line"

finish
