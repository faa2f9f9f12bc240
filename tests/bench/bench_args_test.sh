#!/usr/bin/env bash
# Arguments of the benchmark programs without MPI (cerar-bench's own: tests/mpi/bench_checks_test.sh).
#   bench_args_test.sh SOURCE_DIR PROGRAM...   (the programs by path; any may be left out)
set -uo pipefail
src=$1
shift
source "$src/tests/cli/harness.sh"
declare -A path
for p in "$@"; do path[$(basename "$p")]=$p; done

# refused PROGRAM MESSAGE ARGS...: exit 2, one line on stderr holding MESSAGE, nothing on stdout,
# within 5 s (a full run takes far longer).
refused() {
  local program=$1 message=$2
  shift 2
  [[ -n ${path[$program]:-} ]] || return 0
  timeout 5 "${path[$program]}" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [[ $rc -eq 2 && ! -s $work/out && $(wc -l <"$work/err") -eq 1 ]] &&
     grep -qF -- "$message" "$work/err"; then
    ok "$program $*: refused"
  else
    bad "$program $*: rc $rc, stdout $(head -c 200 "$work/out"), stderr $(head -c 300 "$work/err")"
  fi
}

# help PROGRAM: --help prints the usage and exits 0 at once.
help() {
  local program=$1
  [[ -n ${path[$program]:-} ]] || return 0
  timeout 5 "${path[$program]}" --help >"$work/out" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]] && grep -q "^Usage: $program" "$work/out"; then
    ok "$program --help"
  else
    bad "$program --help: rc $rc, $(head -c 300 "$work/out")"
  fi
}

help cerar-bench-compute
refused cerar-bench-compute "not expected: --bogus" --bogus
refused cerar-bench-compute "--reps" --reps
refused cerar-bench-compute "--elements" --elements -1
refused cerar-bench-compute "--elements" --elements 100x --N 3
refused cerar-bench-compute "--reps" --reps 2.9
refused cerar-bench-compute "--N" --N 99999999999 --elements 4096
refused cerar-bench-compute "--elements 1000000000000 with --N 8 needs" --elements 1000000000000
refused cerar-bench-compute "--segment 6: not a whole number of float32 elements" --segment 6
refused cerar-bench-compute "not expected: extra" extra

help cerar-bench-design
refused cerar-bench-design "not expected: --quik" --quik
refused cerar-bench-design "not expected: extra" --quick extra

help cerar-bench-optimizer
refused cerar-bench-optimizer "mode is required" 
refused cerar-bench-optimizer "mode: bogus not in" bogus
refused cerar-bench-optimizer "not expected: --quik" reused --quik
refused cerar-bench-optimizer "not expected: extra" kept extra
refused cerar-bench-optimizer "not expected: --bogus" reused --quick --bogus
finish
