#!/usr/bin/env bash
# How the scripts treat their build folder, with fake cmake and dpkg-query (nothing is built or
# installed): a folder that holds only the CMakeCache.txt of a failed or interrupted configure is
# configured again (scripts/common.sh's cerar_build, scripts/sanitize); a configured one is not.
#   build_dir_test.sh SOURCE
set -uo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

# Fakes: every package "installed" (scripts/setup is then a no-op); cmake logs its arguments.
bin=$work/bin
mkdir -p "$bin"
printf '#!/bin/sh\necho "install ok installed"\n' >"$bin/dpkg-query"
cat >"$bin/cmake" <<SH
#!/bin/sh
echo "\$*" >>"$work/cmake.log"
SH
printf '#!/bin/sh\nexit 0\n' >"$bin/ctest"
chmod +x "$bin"/*

# configures NAME WANT DIR COMMAND...: COMMAND with the fakes runs cmake -S (WANT yes) or not (no).
configures() {
  local name=$1 want=$2 dir=$3 got=no
  shift 3
  rm -f "$work/cmake.log"
  PATH="$bin:$PATH" "$@" >"$work/out" 2>&1
  grep -q -- '-S ' "$work/cmake.log" 2>/dev/null && got=yes
  [[ $got == "$want" ]] && ok "$name: configure run: $got" ||
    { bad "$name: configure run: $got (expected $want)"; sed 's/^/     | /' "$work/out" "$work/cmake.log"; }
}
failed_configure() {  # DIR: what a failed configure leaves: the cache, CMakeFiles, no Makefile
  mkdir -p "$1/CMakeFiles"
  echo "CMAKE_BUILD_TYPE:STRING=Release" >"$1/CMakeCache.txt"
}

failed_configure "$work/b1"
configures "cerar_build after a failed configure" yes "$work/b1" \
  env CERAR_BUILD_DIR="$work/b1" bash -c 'source "$1/scripts/common.sh"; cerar_build cerar' _ "$src"
failed_configure "$work/b2"
touch "$work/b2/Makefile"
configures "cerar_build in a configured folder" no "$work/b2" \
  env CERAR_BUILD_DIR="$work/b2" bash -c 'source "$1/scripts/common.sh"; cerar_build cerar' _ "$src"
for b in s1 s2; do
  failed_configure "$work/$b"
  mkdir -p "$work/$b/tests/fuzz"
  printf '#!/bin/sh\nexit 0\n' >"$work/$b/tests/fuzz/cerar_fuzz_design_file"
  chmod +x "$work/$b/tests/fuzz/cerar_fuzz_design_file"
done
touch "$work/s2/build.ninja"
configures "sanitize after a failed configure" yes "$work/s1" \
  env CERAR_SANITIZE_BUILD_DIR="$work/s1" bash "$src/scripts/sanitize" fuzz 1 1
configures "sanitize in a configured folder" no "$work/s2" \
  env CERAR_SANITIZE_BUILD_DIR="$work/s2" bash "$src/scripts/sanitize" fuzz 1 1

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
