#!/usr/bin/env bash
# cerar-bench's checks, each a short run at 1 or 2 ranks: results that must fail the run, and
# arguments that must be refused with one line per rank and exit 2 before the table header.
#   bench_checks_test.sh SOURCE_DIR BENCH MPIEXEC [MPIEXEC ARGS...]
set -uo pipefail
src=$1 bench=$2
shift 2
mpiexec=("$@")
source "$src/tests/cli/harness.sh"
design=$src/matrices/eps_N2_c4.json
export OMPI_MCA_coll_tuned_use_dynamic_rules=1

# run NP ARGS...: the bench's stdout+stderr in $work/out, its exit status in $rc. NP 1: a
# singleton without mpiexec (a third of a second), for the argument checks.
run() {
  local np=$1
  shift
  if [[ $np -eq 1 ]]; then
    timeout 60 "$bench" "$@" >"$work/out" 2>&1
  else
    timeout 60 "${mpiexec[@]}" -np "$np" "$bench" "$@" >"$work/out" 2>&1
  fi
  rc=$?
}

# A design whose rank 1 decodes to NaN (float32 overflow; rank 0 is exact): MPI_MAX would drop
# rank 1's NaN error, so the run must fail on rank 1's own check.
run 2 --design "$src/tests/mpi/bench_nan_rank1.json" --sizes 4KiB --reps 3 --algorithms cerar,ring
if [[ $rc -ne 0 ]] && grep -q "\[rank 1\] rank 1: cerar:bench_nan_rank1 at 4KiB, timed run 1 of 3: .* NaN or infinite" "$work/out"; then
  ok "NaN on rank 1 fails the run (rc $rc)"
else
  bad "NaN on rank 1: rc $rc, output: $(head -c 600 "$work/out")"
fi
# A healthy run passes every check (all timed runs compared) and exits 0.
run 2 --design "$design" --sizes 4KiB,1000 --reps 3 --algorithms cerar,ring,mpi_allreduce
if [[ $rc -eq 0 ]] && grep -q "^cerar:eps_N2_c4 *1000B" "$work/out"; then
  ok "a healthy run exits 0"
else
  bad "healthy run: rc $rc, output: $(head -c 600 "$work/out")"
fi
# A size the node cannot hold is refused before any run (the OOM killer would end one rank
# mid-run): one line from the node's first rank, exit 2, no table. (1 PiB: no node holds it.)
run 2 --design "$design" --sizes 4KiB,1048576GiB --algorithms cerar,ring
if [[ $rc -eq 2 ]] && ! grep -q "^algorithm" "$work/out" &&
   [[ $(grep -c "above its MemAvailable" "$work/out") -eq 1 ]] &&
   grep -q "\[rank 0\] --sizes up to 1048576GiB need about 2621440.0 GiB per rank (its buffer and cerar:eps_N2_c4's workspace), 2 ranks on this node: 5242880.0 GiB" "$work/out"; then
  ok "a size the node cannot hold is refused before any run"
else
  bad "memory check: rc $rc, output: $(head -c 600 "$work/out")"
fi
# refused MESSAGE ARGS...: the bench (one rank: the argument checks come before the design's N
# is compared) must stop with exit 2 and MESSAGE in one line before the table header.
refused() {
  local message=$1
  shift
  run 1 --design "$design" "$@"
  if [[ $rc -eq 2 ]] && [[ $(wc -l <"$work/out") -eq 1 ]] && grep -qF -- "$message" "$work/out"; then
    ok "refused: $* ($message)"
  else
    bad "not refused as expected: $* (rc $rc): $(head -c 400 "$work/out")"
  fi
}

# Sizes: a whole number (>= 1) of elements, no wrap past 2^64, no empty list item.
refused "--sizes 1001B: not a whole number of f32 elements (4 bytes each)" --sizes 4KiB,1001
refused "--sizes 12B: not a whole number of f64 elements (8 bytes each)" --sizes 12 --dtype f64
refused "--sizes 3B: less than one f32 element (4 bytes)" --sizes 3
refused "--sizes 0B: less than one f32 element" --sizes 0
refused "--sizes '17179869184GiB': more than 2^64 - 1 bytes" --sizes 17179869184GiB
refused "--sizes '18446744073709551616': more than 2^64 - 1 bytes" --sizes 18446744073709551616
refused "--sizes '4KiB,': empty item" --sizes 4KiB,
refused "--sizes '-4': expected a number of bytes" --sizes -4
refused "--slots '': expected a whole number >= 1" --slots 8, --sizes 4KiB
# A parse error on one rank only (MPMD: rank 1 has another command line) ends the job at once
# with rank 1's line, instead of rank 0 waiting --timeout for it.
start=$SECONDS
timeout 60 "${mpiexec[@]}" -np 1 "$bench" --design "$design" --sizes 4KiB --timeout 30 : \
  -np 1 "$bench" --design "$design" --sizes 4KiB --timeout 30 --reps x >"$work/out" 2>&1
rc=$?
if [[ $rc -ne 0 && $((SECONDS - start)) -lt 15 ]] && grep -q "\[rank 1\] Could not convert: --reps = x" "$work/out"; then
  ok "a parse error on rank 1 alone ends the job with its line ($((SECONDS - start)) s)"
else
  bad "parse error on rank 1 alone: rc $rc after $((SECONDS - start)) s: $(head -c 400 "$work/out")"
fi
refused "Could not convert: --reps = 2.5" --reps 2.5

# Rows must have names of their own; a link rate must be a number of Mbit/s.
refused "another design has the row name 'eps_N2_c4'" --design "$design"
refused "--rate-mbit -5: expected a finite rate in Mbit/s" --rate-mbit -5
# The header prints the rate as given and the segments as sizes; a row without a ring has no ratio.
run 2 --design "$design" --sizes 4KiB --reps 2 --algorithms cerar --segment 64KiB,1MiB \
  --rate-mbit 1e30
if [[ $rc -eq 0 ]] && grep -q "segment 64KiB,1MiB, 8 slots, .*, link 1e+30 Mbit/s$" "$work/out" &&
   grep -Eq "^cerar:eps_N2_c4/seg64KiB +4KiB +[0-9.]+e-[0-9]+ +n/a " "$work/out"; then
  ok "header and rows without a ring"
else
  bad "header and rows without a ring: rc $rc: $(head -c 600 "$work/out")"
fi

# Every option is checked before the header: the CSV's folder, segments, algorithms, and the int
# count of MPI_Allreduce (only when an MPI_Allreduce algorithm runs).
refused "--csv: output /nonexistent/dir/x.csv: folder /nonexistent/dir does not exist" \
  --csv /nonexistent/dir/x.csv --sizes 4KiB
refused "--segment 0B: less than one f32 element" --segment 0
refused "--segment 6B: not a whole number of f32 elements" --segment 1MiB,6
refused "--algorithms: 'bogus' is not cerar, ring" --algorithms cerar,bogus
refused "--algorithms: empty value" --algorithms ""
refused "--algorithms: 'ring' is given twice" --algorithms ring,cerar,ring
refused "--sizes 100GiB: 26843545600 elements, beyond mpi_allreduce's int count" \
  --sizes 4KiB,100GiB --algorithms cerar,mpi_allreduce
# docs/runtime.md's cerar-bench commands run as written (at 2 ranks, one 4 KiB run, our design),
# without the MCA variable in the environment: the commands must carry what they need.
doc_commands() {
  python3 - "$src/docs/runtime.md" <<'PY'
import re, shlex, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
for m in re.finditer(r"mpiexec", text):
    cmd = re.split(r"`|\n\n", text[m.start():], maxsplit=1)[0].replace("\n", " ")
    if "cerar-bench" in cmd:
        print(cmd)
PY
}
n=0
while IFS= read -r cmd; do
  n=$((n + 1))
  read -ra words <<<"$cmd"
  args=()
  for ((i = 1; i < ${#words[@]}; i++)); do
    case ${words[i]} in
      -n) args+=(-n 2); i=$((i + 1)) ;;
      --design) args+=(--design "$design"); i=$((i + 1)) ;;
      --sizes) args+=(--sizes 4KiB); i=$((i + 1)) ;;
      --reps) args+=(--reps 1); i=$((i + 1)) ;;
      --csv) args+=(--csv "$work/doc.csv"); i=$((i + 1)) ;;
      cerar-bench) args+=("$bench") ;;
      *) args+=("${words[i]}") ;;
    esac
  done
  env -u OMPI_MCA_coll_tuned_use_dynamic_rules timeout 60 "${mpiexec[@]}" "${args[@]}" \
    </dev/null >"$work/out" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q "^mpi_allreduce_ring " "$work/out"; then
    ok "docs/runtime.md command $n runs"
  else
    bad "docs/runtime.md command $n ($cmd): rc $rc: $(head -c 400 "$work/out")"
  fi
done < <(doc_commands)
[[ $n -ge 2 ]] || bad "docs/runtime.md: found $n cerar-bench commands, expected 2"
# Without the variable, the default algorithms stop before the header with one line saying so.
env -u OMPI_MCA_coll_tuned_use_dynamic_rules timeout 60 "${mpiexec[@]}" -np 2 "$bench" \
  --design "$design" --sizes 4KiB >"$work/out" 2>&1
rc=$?
if [[ $rc -eq 2 ]] && grep -q "coll_tuned_use_dynamic_rules = 1 at launch" "$work/out" &&
   ! grep -q "^algorithm" "$work/out"; then
  ok "mpi_allreduce_ring without the MCA variable: refused before the header"
else
  bad "mpi_allreduce_ring without the MCA variable: rc $rc: $(head -c 400 "$work/out")"
fi
finish
