#!/usr/bin/env bash
# The arguments of scripts/sanitize, scripts/setup, scripts/optimizer-table and
# scripts/optimizer-rescaling: a mistake is named in one line, exit 2, at once - before anything
# is installed, built or run for minutes. Fakes stand in for apt-get, dpkg-query, sudo and the CLI.
#   args_test.sh SOURCE
set -uo pipefail
source "$(dirname "$0")/../cli/harness.sh"
src=$1

bin=$work/bin
mkdir -p "$bin"
# Installed: everything but $FAKE_MISSING (a space-separated list).
cat >"$bin/dpkg-query" <<'SH'
#!/bin/sh
for a; do last=$a; done
for p in $FAKE_MISSING; do [ "$p" = "$last" ] && exit 1; done
echo "install ok installed"
SH
cat >"$bin/apt-get" <<SH
#!/bin/sh
echo "DEBIAN_FRONTEND=\${DEBIAN_FRONTEND:-} \$*" >>"$work/apt.log"
SH
# sudo as with env_reset: only PATH survives.
printf '#!/bin/sh\nexec env -i PATH="$PATH" "$@"\n' >"$bin/sudo"
printf '#!/bin/sh\n[ "$1" = -u ] && { echo 1000; exit 0; }\nexec /usr/bin/id "$@"\n' >"$work/id"
# A CLI that refuses its input, on stderr.
printf '#!/bin/sh\necho "cerar: -c 3 must be at least N = 4" >&2\nexit 2\n' >"$work/cerar"
chmod +x "$bin"/* "$work/id" "$work/cerar"

# one NAME STATUS EXPECTED-SUBSTRING COMMAND...: exits STATUS within 20 s, one line containing it.
one() {
  local name=$1 want=$2 text=$3 rc=0 out
  shift 3
  out=$(cd "$work" && PATH="$bin:$PATH" timeout 20 "$@" 2>&1 </dev/null) || rc=$?
  if [[ $rc -eq $want && $out == *"$text"* && $out != *$'\n'* ]]; then
    ok "$name: exit $rc: $out"
  else
    bad "$name: exit $rc (expected $want): $out"
  fi
}
S=(env CERAR_SANITIZE_BUILD_DIR="$work/sb" bash "$src/scripts/sanitize")
one "sanitize: unknown mode" 2 "sanitize: unknown mode 'nosuchmode'" "${S[@]}" nosuchmode
one "sanitize: --help is not a mode" 0 "" true
out=$(PATH="$bin:$PATH" "${S[@]}" --help 2>&1) && [[ $out == *"scripts/sanitize fuzz [SECONDS]"* ]] \
  && ok "sanitize --help: usage" || bad "sanitize --help: $out"
one "sanitize: fuzz 1h" 2 "fuzz: '1h': expected a whole number above 0" "${S[@]}" fuzz 1h
one "sanitize: fuzz abc" 2 "fuzz: 'abc'" "${S[@]}" fuzz abc
one "sanitize: fuzz 10 0" 2 "fuzz: '0'" "${S[@]}" fuzz 10 0
one "sanitize: all x" 2 "unexpected argument 'x'" "${S[@]}" all x
[[ ! -e $work/sb ]] && ok "sanitize: nothing configured or built" || bad "sanitize made $work/sb"

one "setup: misspelt option" 2 "scripts/setup: unknown option '--sanitise'" bash "$src/scripts/setup" --sanitise
rm -f "$work/apt.log"
FAKE_MISSING="clang-14 jupyter-nbconvert" PATH="$bin:$PATH" bash "$src/scripts/setup" --python --sanitize \
  >/dev/null 2>&1
grep -q "install.* clang-14" "$work/apt.log" 2>/dev/null && grep -q "install.* jupyter-nbconvert" "$work/apt.log" \
  && ok "setup --python --sanitize: both extras" || bad "setup --python --sanitize: $(cat "$work/apt.log" 2>&1)"
# Not root: through sudo, whose env_reset drops exported variables.
rm -f "$work/apt.log"
cp "$work/id" "$bin/id"
FAKE_MISSING=clang-14 PATH="$bin:$PATH" bash "$src/scripts/setup" --sanitize >/dev/null 2>&1
rm -f "$bin/id"
[[ $(grep -c '^DEBIAN_FRONTEND=noninteractive ' "$work/apt.log" 2>/dev/null) -eq 2 ]] \
  && ok "setup through sudo: apt-get runs noninteractive" || bad "setup through sudo: $(cat "$work/apt.log" 2>&1)"

T=(bash "$src/scripts/optimizer-table")
one "optimizer-table: --csv in a missing folder" 2 "/nonexistent/x.csv: /nonexistent is not a writable folder" \
  "${T[@]}" float32 --csv /nonexistent/x.csv --cerar /bin/false
one "optimizer-table: --seed with float32" 2 "--seed is for the kappa table only" \
  "${T[@]}" float32 --seed 3 --cerar /bin/false
one "optimizer-table: --csv with kappa" 2 "--csv is for the float32 table only" \
  "${T[@]}" --csv "$work/x.csv" --cerar /bin/false
R=(bash "$src/scripts/optimizer-rescaling")
one "optimizer-rescaling: -N without a value" 2 "optimizer-rescaling: -N needs a value" "${R[@]}" -N
# It says first what it is doing; then the CLI's message, not a silent exit.
rc=0
out=$("${R[@]}" -N 4 -c 3 --cerar "$work/cerar" 2>&1) || rc=$?
[[ $rc -eq 2 && $(tail -1 <<<"$out") == *"cerar design failed (exit 2): cerar: -c 3 must be at least N = 4" ]] \
  && ok "optimizer-rescaling: the CLI refuses: $(tail -1 <<<"$out")" || bad "optimizer-rescaling: the CLI refuses: exit $rc: $out"

finish
