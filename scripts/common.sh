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

cerar_build() {  # cerar_build [target...]
  "$CERAR_ROOT/scripts/setup"
  if [[ ! -f "$CERAR_BUILD/CMakeCache.txt" ]]; then
    cmake -S "$CERAR_ROOT" -B "$CERAR_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$CERAR_BUILD" -j"$JOBS" "${targets[@]}"
}
