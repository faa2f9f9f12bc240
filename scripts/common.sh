# Sourced by scripts/run and scripts/test: install dependencies, configure and build.
# CERAR_BUILD_DIR overrides the build folder (default: build/ in the repository).
set -euo pipefail
CERAR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CERAR_BUILD=${CERAR_BUILD_DIR:-$CERAR_ROOT/build}
JOBS=${CERAR_JOBS:-$(nproc)}

# OpenMPI refuses to run as root unless told; these are its documented switches.
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# More ranks than cores is normal here (8 ranks on 2 cores): let OpenMPI oversubscribe.
export OMPI_MCA_rmaps_base_oversubscribe=1

# Whether DIR holds a generated build system. Not CMakeCache.txt: CMake writes that also when
# configure fails or is interrupted, and a build folder left so must be configured again.
cerar_configured() { [[ -f $1/Makefile || -f $1/build.ninja ]]; }

cerar_configure() {  # installs what is missing, configures the build folder unless it is
  "$CERAR_ROOT/scripts/setup"
  if ! cerar_configured "$CERAR_BUILD"; then
    cmake -S "$CERAR_ROOT" -B "$CERAR_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null ||
      { echo "scripts: configuring $CERAR_BUILD failed (messages above); fix that and run again" >&2; exit 1; }
  fi
}

cerar_build() {  # cerar_build [target...]
  cerar_configure
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$CERAR_BUILD" -j"$JOBS" "${targets[@]}"
}
