#!/usr/bin/env bash
# scripts/netbench run keeps the previous results of its --out folder until a run has finished:
# a second run that fails in its first cell leaves netbench.csv, netbench.png, run.txt and parts/
# as the first run wrote them. Fakes stand in for ip, mpirun and cerar-bench (no namespace, link or
# MPI run is made); needs root only for netbench's state folder (exit 77: skipped).
#   netbench_run_test.sh SOURCE
set -uo pipefail
source "$(dirname "$0")/../cli/harness.sh"
src=$1
netbench=$src/scripts/netbench
[[ $(id -u) -eq 0 ]] || { echo "netbench run: needs root, skipped"; exit 77; }

bin=$work/bin
mkdir -p "$bin"
# ip: nothing exists (show fails), everything else succeeds and does nothing.
printf '#!/bin/sh\ncase "$*" in *" show "*) exit 1 ;; esac\nexit 0\n' >"$bin/ip"
# mpirun: writes to the --csv path the first rows of docs/netbench_nap.csv with rate_mbit set to
# $FAKE_TAG, or fails when FAKE_FAIL is set.
cat >"$bin/mpirun" <<'SH'
#!/bin/sh
[ -z "$FAKE_FAIL" ] || exit 1
while [ $# -gt 0 ]; do [ "$1" = --csv ] && { csv=$2; break; }; shift; done
head -3 "$FAKE_CSV" | awk -F, -v OFS=, -v r="$FAKE_TAG" 'NR > 1 { $5 = r } 1' >"$csv"
SH
printf '#!/bin/sh\nexit 0\n' >"$bin/bench"
chmod +x "$bin"/*

out=$work/out
nb() { PATH="$bin:$PATH" FAKE_CSV="$src"/docs/netbench_nap.csv CERAR_BENCH="$bin/bench" "$netbench" run --ranks 4 --rates 100 --sizes 4MiB \
         --reps 1 --big-sizes '' --designs eps --algorithms cerar,ring --out "$out" "$@"; }
if FAKE_TAG=100 nb >"$work/log1" 2>&1 && [[ -s $out/netbench.csv && -s $out/run.txt ]]; then
  ok "first run wrote $out"
else
  bad "first run: $(tail -5 "$work/log1")"
fi
echo "a file of the user's" >"$out/notes.txt"
snap() { (cd "$out" && find . -type f | sort | xargs md5sum); }
before=$(snap)
rc=0
FAKE_TAG=100 FAKE_FAIL=1 nb >"$work/log2" 2>&1 || rc=$?
[[ $rc -ne 0 ]] && ok "failing run: exit $rc" || bad "failing run: exit 0"
[[ $(snap) == "$before" ]] && ok "failing run: the first run's results and other files intact" \
  || bad "failing run changed $out: $(diff <(echo "$before") <(snap) | tr '\n' ' ')"
left=$(find "$work" -maxdepth 1 -name 'out.partial.*')
[[ -z $left ]] && ok "failing run: no partial folder (nothing measured)" || bad "left: $left"
FAKE_TAG=300 nb >"$work/log3" 2>&1
awk -F, 'NR > 1 && $5 != 300 { bad = 1 } END { exit bad }' "$out/netbench.csv" && ok "a finished run replaces the results" \
  || bad "finished run: $(tail -3 "$work/log3")"
[[ -f $out/notes.txt ]] && ok "a finished run keeps other files" || bad "notes.txt removed"
finish
