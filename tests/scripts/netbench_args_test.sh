#!/usr/bin/env bash
# scripts/netbench's options and netbench_plot.py's input: a mistake is named in one line, exit 2,
# before anything is created (no root needed: the options are checked first). And `run`'s
# provenance line as root in a repository owned by another user (git's safe.directory).
#   netbench_args_test.sh SOURCE
set -uo pipefail
source "$(dirname "$0")/../cli/harness.sh"
src=$1
netbench=$src/scripts/netbench

state() { ls /run/cerar-netbench 2>/dev/null; ls /run/netns 2>/dev/null; }
before=$(state)
# one NAME EXPECTED-SUBSTRING COMMAND...: exit 2, one line containing it, nothing created.
one() {
  local name=$1 want=$2 rc=0 out
  shift 2
  out=$(cd "$work" && timeout 20 "$@" 2>&1 </dev/null) || rc=$?
  if [[ $rc -eq 2 && $out == *"$want"* && $out != *$'\n'* && $(state) == "$before" ]]; then
    ok "$name: $out"
  else
    bad "$name: exit $rc: $out"
  fi
}
one "rate without MBIT" "rate: MBIT needed" "$netbench" rate --id 3
one "rate with two MBIT" "one MBIT expected, got '50' and '80'" "$netbench" rate --id 3 50 80
one "rate not a number" "rate 'x': expected a whole number" "$netbench" up --id 3 --rate x
one "run --out ''" "run: --out is empty" "$netbench" run --out ''
one "down --ranks" "down: unknown option '--ranks'" "$netbench" down --ranks 8
one "exec --rate" "exec: unknown option '--rate'" "$netbench" exec --rate 5 -- true
one "rate --rate" "rate: unknown option '--rate'" "$netbench" rate --rate 5
one "quick --rate abc" "rate 'abc': expected a whole number" "$netbench" quick --rate abc
[[ ! -e $work/parts && ! -e /parts && ! -e /run.txt ]] && ok "no output folder made" || bad "output written"

# netbench_plot.py: a field that is not a number.
{ head -1 "$src/docs/netbench_nap.csv"; sed -n 2p "$src/docs/netbench_nap.csv" | awk -F, -v OFS=, '{ $6 = "abc" } 1'; } >"$work/bad.csv"
one "plot: size_bytes abc" "bad.csv:2: size_bytes = 'abc' is not a number" \
  /usr/bin/python3 "$src/scripts/netbench_plot.py" --table "$work/bad.csv"

# Provenance: a repository owned by another user, read by root. git refuses it unless told
# (safe.directory): the line must still name the commit and say nothing of "modified".
if [[ $(id -u) -eq 0 ]] && command -v git >/dev/null; then
  repo=$work/repo
  mkdir -p "$repo/scripts"
  cp "$netbench" "$src/scripts/common.sh" "$repo/scripts/"
  git -C "$repo" init -q && git -C "$repo" add -A &&
    git -C "$repo" -c user.name=t -c user.email=t@t commit -qm t
  chown -R 65534:65534 "$repo"
  line=$(HOME=$work bash -c 'source <(sed -n "/^provenance() {/,/^}/p" "$1"); CERAR_ROOT=$2; provenance' _ \
    "$repo/scripts/netbench" "$repo")
  commit=$(git -c safe.directory="$repo" -C "$repo" rev-parse --short HEAD)
  [[ $line == "$commit" ]] && ok "provenance in another user's repository: $line" \
    || bad "provenance in another user's repository: '$line' (expected '$commit')"
else
  echo "skip provenance: needs root and git"
fi

finish
