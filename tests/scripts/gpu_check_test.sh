#!/usr/bin/env bash
# scripts/gpu-check's own behaviour, on any machine (no GPU, no CUDA build needed): fake
# nvidia-smi, cmake, nvcc and test binaries stand in for the real ones. Where it cannot run
# (no GPU, binaries not built, no nvcc) it exits 2 with one line that names what is missing and
# what to do; a failed build or test exits 1 naming the step - never "FAILED at line N".
#   gpu_check_test.sh SOURCE
set -uo pipefail
source "$(dirname "$0")/../cli/harness.sh"
script=$1/scripts/gpu-check

# Fake tools: nvidia-smi with $FAKE_GPUS GPUs, nvcc, and cmake whose build prints no "error".
bin=$work/bin
mkdir -p "$bin"
cat >"$bin/nvidia-smi" <<'SH'
#!/bin/sh
[ "${FAKE_GPUS:-0}" -gt 0 ] || { echo "No devices were found"; exit 6; }
case "$1" in -L) i=0; while [ $i -lt "$FAKE_GPUS" ]; do echo "GPU $i: Fake (UUID: GPU-$i)"; i=$((i+1)); done ;; esac
SH
printf '#!/bin/sh\necho "Cuda compilation tools, release 0.0, fake"\n' >"$bin/nvcc"
cat >"$bin/cmake" <<'SH'
#!/bin/sh
case "$*" in
  *--build*) echo "gmake: *** No rule to make target 'cerar_cuda_tests'.  Stop."; exit 2 ;;
  *) echo "-- CERAR: MPI OFF, CUDA ON" ;;
esac
SH
# A slow tee (as on a loaded machine): gpu-check must still have written its last line when it
# exits, to stdout and to its log.
printf '#!/bin/sh\nsleep 0.3\nexec %s "$@"\n' "$(command -v tee)" >"$bin/tee"
chmod +x "$bin"/*
# A build folder whose test binary crashes without printing a gtest "Failure", and one whose
# binaries pass as on a machine without a GPU (tests skip, the benchmark finds no device: 3).
crash=$work/crash pass=$work/pass
for b in "$crash" "$pass"; do mkdir -p "$b/tests/cuda" "$b/runtime/src/cuda"; done
printf '#!/bin/sh\necho "Segmentation fault"\nexit 139\n' >"$crash/tests/cuda/cerar_cuda_tests"
printf '#!/bin/sh\nexit 0\n' >"$crash/runtime/src/cuda/cerar_cuda_bench"
printf '#!/bin/sh\necho "[  PASSED  ] 1 test."\n' >"$pass/tests/cuda/cerar_cuda_tests"
printf '#!/bin/sh\necho "no CUDA device"\nexit 3\n' >"$pass/runtime/src/cuda/cerar_cuda_bench"
chmod +x "$crash"/*/cuda/* "$crash"/runtime/src/cuda/* "$pass"/*/cuda/* "$pass"/runtime/src/cuda/*

# check NAME STATUS REGEX [VAR=VALUE...]: gpu-check under these settings exits STATUS, its last
# line matches REGEX, and no line says "FAILED at line".
n=0
check() {
  local name=$1 want=$2 regex=$3
  shift 3
  n=$((n + 1))
  local out=$work/out$n rc=0
  env PATH="$bin:$PATH" CUDACXX="$bin/nvcc" OUT="$work/o$n" CERAR_GPU_BUILD="$work/b$n" \
    CERAR_GPU_JOBS=1 "$@" bash "$script" >"$out" 2>&1 </dev/null || rc=$?
  local last
  last=$(grep -v '^[[:space:]]*$' "$out" | tail -1)
  local logged=
  [[ ! -f $work/o$n/gpu-check.log ]] || logged=$(grep -v '^[[:space:]]*$' "$work/o$n/gpu-check.log" | tail -1)
  if [[ $rc -eq $want ]] && [[ $last =~ $regex ]] && ! grep -q "FAILED at line" "$out" &&
     [[ $logged == "$last" ]]; then
    ok "$name: exit $rc: $last"
  else
    bad "$name: exit $rc (expected $want), last line '$last' (expected /$regex/), log's '$logged'"
    sed 's/^/     | /' "$out" | tail -15
  fi
}

check "no GPU" 2 '^gpu-check: cannot run: no GPU on this machine \(nvidia-smi lists none\).*CERAR_GPU_CHECK_DRY=1' \
  FAKE_GPUS=0
# No nvidia-smi: the system's folders, but through links to every program in them except
# nvidia-smi (a GPU host has /usr/bin/nvidia-smi), and the slow tee.
sys=$work/sys
mkdir -p "$sys"
ln -s /usr/bin/* "$sys/" 2>/dev/null
[[ /bin -ef /usr/bin ]] || ln -s /bin/* "$sys/" 2>/dev/null  # names in both: /usr/bin's
rm -f "$sys/nvidia-smi"
ln -sf "$bin/tee" "$sys/tee"
check "no GPU, no nvidia-smi" 2 '^gpu-check: cannot run: no GPU on this machine \(nvidia-smi not found\)' \
  PATH="$sys" CUDACXX="$bin/nvcc"
check "prebuilt, not built (dry run)" 2 '^gpu-check: cannot run: .*/tests/cuda/cerar_cuda_tests is not built: build it with .*cmake --build .*--target cerar_cuda_tests cerar_cuda_bench' \
  FAKE_GPUS=0 CERAR_GPU_CHECK_DRY=1 CERAR_GPU_PREBUILT=1
check "prebuilt, not built (GPU present)" 2 '^gpu-check: cannot run: .*cerar_cuda_tests is not built: build it with' \
  FAKE_GPUS=1 CERAR_GPU_PREBUILT=1
# Without nvcc (only where the system folders have none: /usr/bin/nvcc from a distribution's
# toolkit would be found): the fake tools but nvcc.
nonvcc=$work/nonvcc
mkdir -p "$nonvcc" && cp "$bin/cmake" "$bin/nvidia-smi" "$nonvcc/"
if PATH=/usr/bin:/bin command -v nvcc >/dev/null; then
  echo "skip no nvcc to build: $(PATH=/usr/bin:/bin command -v nvcc) is on the system path"
else
  check "no nvcc to build" 2 '^gpu-check: cannot run: nvcc \(the CUDA toolkit\) not found.*CERAR_GPU_PREBUILT=1' \
    FAKE_GPUS=1 CUDACXX="$work/no-nvcc" PATH="$nonvcc:/usr/bin:/bin"
fi
check "build fails without compiler errors" 1 '^gpu-check: FAILED: build \(log: build.log\)$' \
  FAKE_GPUS=0 CERAR_GPU_CHECK_DRY=1
check "test binary crashes" 1 '^gpu-check: FAILED: GPU tests \(exit 139; log: cuda_tests.log\)$' \
  FAKE_GPUS=0 CERAR_GPU_CHECK_DRY=1 CERAR_GPU_PREBUILT=1 CERAR_GPU_BUILD="$crash"
check "dry run passes" 0 '^== .* DRY RUN finished' \
  FAKE_GPUS=0 CERAR_GPU_CHECK_DRY=1 CERAR_GPU_PREBUILT=1 CERAR_GPU_BUILD="$pass"
# one NAME EXPECTED-LINE-PREFIX COMMAND...: exit 2 with exactly one line, starting so.
one() {
  local name=$1 want=$2 rc=0 out
  shift 2
  out=$("$@" 2>&1) || rc=$?
  if [[ $rc -eq 2 && $out == "$want"* && $out != *$'\n'* ]]; then
    ok "$name: exit 2: $out"
  else
    bad "$name: exit $rc: $out"
  fi
}
one "an argument" "gpu-check: cannot run: no arguments expected, got 'x'" \
  env OUT="$work/oarg" CERAR_GPU_BUILD="$work/barg" bash "$script" x
one "unwritable OUT" "gpu-check: cannot run: cannot create the output folder /proc/gpu-check-test" \
  env OUT=/proc/gpu-check-test CERAR_GPU_BUILD="$work/bout" bash "$script"

finish
