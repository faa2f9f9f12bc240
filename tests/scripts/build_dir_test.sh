#!/usr/bin/env bash
# How the scripts treat their build folder, with fake cmake and dpkg-query (nothing is built or
# installed): a folder that holds only the CMakeCache.txt of a failed or interrupted configure is
# configured again (scripts/common.sh's cerar_build, scripts/sanitize); a configured one is not.
# scripts/train on a build without the Python package says so (exit 2) before building; .ci/run
# gives the notebooks the CLI of CERAR_BUILD_DIR's build.
#   build_dir_test.sh SOURCE
set -uo pipefail
source "$(dirname "$0")/../cli/harness.sh"
src=$1

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

# configures NAME WANT DIR COMMAND...: COMMAND (on build folder DIR) with the fakes runs cmake -S
# (WANT yes) or not (no).
configures() {
  local name=$1 want=$2 got=no  # DIR: for the reader
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

# scripts/train, the build configured without the Python package: make would say only "No rule to
# make target 'cerar_python'".
mkdir -p "$work/t"
touch "$work/t/Makefile"
printf 'CERAR_PYTHON:FILEPATH=/usr/bin/python3\nCERAR_PYTHON_PACKAGE:INTERNAL=OFF\n' >"$work/t/CMakeCache.txt"
cat >"$bin/cmake" <<SH
#!/bin/sh
echo "\$*" >>"$work/cmake.log"
case "\$*" in *--build*cerar_python*) echo "gmake: *** No rule to make target 'cerar_python'.  Stop."; exit 2 ;; esac
SH
rm -f "$work/cmake.log"
rc=0
out=$(PATH="$bin:$PATH" CERAR_BUILD_DIR="$work/t" bash "$src/scripts/train" --quick 2>&1) || rc=$?
if [[ $rc -eq 2 && $out == "scripts/train: the build in $work/t has no Python package"* && $out != *$'\n'* ]] &&
   ! grep -q -- --build "$work/cmake.log"; then
  ok "train without the Python package: $out"
else
  bad "train without the Python package: exit $rc: $out"
fi

# .ci/run with CERAR_BUILD_DIR: its steps stand-ins in a copy of the tree; the notebooks' CLI.
mkdir -p "$work/ci/.ci" "$work/ci/scripts"
cp "$src/.ci/run" "$work/ci/.ci/run"
for s in test run sanitize; do printf '#!/bin/sh\nexit 0\n' >"$work/ci/scripts/$s"; done
printf '#!/bin/sh\necho "$CERAR_CLI" >"%s"\n' "$work/cli" >"$work/ci/scripts/notebooks"
chmod +x "$work/ci/scripts/"*
CERAR_BUILD_DIR=$work/elsewhere bash "$work/ci/.ci/run" >/dev/null 2>&1
[[ $(cat "$work/cli" 2>/dev/null) == "$work/elsewhere/apps/cerar/cerar" ]] \
  && ok ".ci/run: notebooks use CERAR_BUILD_DIR's CLI" || bad ".ci/run: notebooks got CERAR_CLI=$(cat "$work/cli" 2>&1)"
(cd "$work/ci" && env -u CERAR_BUILD_DIR bash .ci/run >/dev/null 2>&1)
[[ $(cat "$work/cli" 2>/dev/null) == "$(cd "$work/ci" && pwd)/build/apps/cerar/cerar" ]] \
  && ok ".ci/run: default build/" || bad ".ci/run default: notebooks got CERAR_CLI=$(cat "$work/cli" 2>&1)"

finish
