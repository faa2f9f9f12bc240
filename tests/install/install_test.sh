#!/usr/bin/env bash
# Install test (docs/training.md §1): CERAR as another project would consume it.
#
#   install_test.sh installed BUILD SOURCE WORK
#     installs this build (static libraries, the default) into WORK/prefix, then configures,
#     builds and runs tests/install/consumer against it (runtime, runtime_mpi, design), and
#     imports the installed Python package.
#   install_test.sh shared BUILD SOURCE WORK
#     builds format + runtime (+ MPI) alone as shared libraries with Boost and NLopt made
#     unfindable, installs them, checks SONAME, RUNPATH and the exported symbols, and runs the
#     consumer against them.
# Every check prints what it saw; the first failure ends the test with exit 1.
set -euo pipefail
mode=$1 build=$2 source=$3 work=$4
consumer=$source/tests/install/consumer
jobs=${CERAR_JOBS:-2}
rm -rf "$work"
mkdir -p "$work"
fail() { echo "install test ($mode): $*" >&2; exit 1; }
mpirun_cmd=(mpirun --oversubscribe)
[[ $(id -u) -eq 0 ]] && mpirun_cmd+=(--allow-run-as-root)

if [[ $mode == installed ]]; then
  prefix=$work/prefix
  cmake --install "$build" --prefix "$prefix" >/dev/null
  cmake -S "$consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
        -DWITH_MPI=ON -DWITH_DESIGN=ON >/dev/null
  cmake --build "$work/consumer" -j"$jobs" >/dev/null
  "$work/consumer/plain_runtime" "$prefix/share/cerar/matrices/eps_N4_c8.json"
  "$work/consumer/make_design"
  "${mpirun_cmd[@]}" -np 3 "$work/consumer/mpi_allreduce"
  # OMPI_SKIP_MPICXX reached the consumer: it references no MPI C++ binding.
  ! nm -u "$work/consumer/mpi_allreduce" | grep -q '_ZN3MPI' \
    || fail "mpi_allreduce references MPI's C++ bindings: $(nm -u "$work/consumer/mpi_allreduce" | grep -m1 _ZN3MPI)"
  # The installed Python package, where the build has one (CERAR_PYTHON_PACKAGE): in a folder that its interpreter searches for this build's prefix (CMAKE_INSTALL_PREFIX;
  # installed here under another), and importable from there with the installed catalogue (not
  # the source tree's).
  if grep -q '^CERAR_PYTHON_PACKAGE:INTERNAL=ON$' "$build/CMakeCache.txt"; then
    python=$(sed -n 's/^CERAR_PYTHON_INTERPRETER:INTERNAL=//p' "$build/CMakeCache.txt")
    target=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
    init=$(find "$prefix" -path '*/cerar/__init__.py' | head -1)
    [[ -n $init ]] || fail "the build has the Python package, but it was not installed"
    pkg=$(dirname "$(dirname "$init")")
    site=$target${pkg#"$prefix"}
    "$python" -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$site" ||
      fail "Python package installed to $site, not on $python's sys.path"
    echo "python: installs to $site, on $python's sys.path"
    PYTHONPATH=$pkg CERAR_MATRICES= "$python" -c '
import cerar, os, sys
d = cerar.pick_design(4, 8)
assert d.path.startswith(sys.argv[1]), d.path
print("python: cerar from", os.path.dirname(cerar.__file__), "picked", os.path.basename(d.path))
' "$prefix" || fail "the installed Python package does not import or find the installed catalogue"
  fi
  # Installed binaries and libraries carry no path into the build tree.
  if grep -rl --binary-files=binary "$build" "$prefix/lib" "$prefix/bin" 2>/dev/null \
       | grep -v '\.cmake$' | grep -q .; then
    fail "installed files mention the build tree $build"
  fi
  echo "install test (installed): ok"
  exit 0
fi

[[ $mode == shared ]] || fail "unknown mode $mode"
prefix=$work/prefix
# Build type None (no optimisation flags): this checks packaging, not speed, and compiles faster.
cmake -S "$source" -B "$work/build" -DCMAKE_BUILD_TYPE=None -DBUILD_SHARED_LIBS=ON \
      -DCERAR_BUILD_DESIGN=OFF -DCERAR_WITH_CUDA=OFF -DCERAR_WITH_PYTHON=OFF \
      -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON -DCMAKE_DISABLE_FIND_PACKAGE_NLopt=ON \
      >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure failed"; }
# CMake lists the two switches as unused: nothing even looked for Boost or NLopt.
for p in Boost NLopt; do
  grep -q "CMAKE_DISABLE_FIND_PACKAGE_$p" "$work/configure.log" \
    || fail "a runtime-only configure searched for $p"
done
echo "runtime-only configure: Boost and NLopt never searched for"
cmake --build "$work/build" -j"$jobs" >/dev/null
cmake --install "$work/build" --prefix "$prefix" >/dev/null
for lib in format runtime runtime_mpi; do
  so=$(ls "$prefix"/lib*/libcerar_$lib.so.*.*.* 2>/dev/null | head -1)
  [[ -n $so ]] || fail "libcerar_$lib.so.<version> not installed"
  soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  runpath=$(readelf -d "$so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  [[ $soname =~ ^libcerar_$lib\.so\.[0-9]+(\.[0-9]+)?$ ]] || fail "$so: SONAME '$soname'"
  [[ -z $runpath || $runpath == '$ORIGIN' ]] || fail "$so: RUNPATH '$runpath'"
  # Exported (defined, dynamic) symbols: the namespace cerar only.
  foreign=$(nm -D --defined-only "$so" | awk '{print $3}' | c++filt | grep -v 'cerar::' || true)
  [[ -z $foreign ]] || fail "$so exports symbols outside namespace cerar: $(echo "$foreign" | head -3)"
  echo "$(basename "$so"): SONAME $soname, RUNPATH '${runpath}', $(nm -D --defined-only "$so" | wc -l) symbols, all in cerar::"
done
[[ ! -e $prefix/include/cerar/design ]] || fail "toolkit headers installed by a runtime-only build"
cmake -S "$consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
      -DWITH_MPI=ON -DWITH_DESIGN=OFF >/dev/null
cmake --build "$work/consumer" -j"$jobs" >/dev/null
"$work/consumer/plain_runtime" "$source/matrices/eps_N4_c8.json"
"${mpirun_cmd[@]}" -np 2 "$work/consumer/mpi_allreduce"
for f in "$work/consumer/mpi_allreduce" "$prefix"/lib*/libcerar_runtime_mpi.so; do
  ! nm -D -u "$f" 2>/dev/null | grep -q '_ZN3MPI' || fail "$f references MPI's C++ bindings"
done
# Asking this installation for the toolkit fails at configure time, naming the component.
if cmake -S "$consumer" -B "$work/consumer-design" -DCMAKE_PREFIX_PATH="$prefix" \
         -DWITH_MPI=OFF -DWITH_DESIGN=ON >"$work/design.log" 2>&1; then
  fail "find_package(cerar COMPONENTS design) succeeded on a runtime-only installation"
fi
grep -q "component 'design' is not in this installation" "$work/design.log" \
  || fail "no clear message for the missing design component: $(grep -m1 -i error "$work/design.log")"
echo "install test (shared): ok"
