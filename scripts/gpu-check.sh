#!/usr/bin/env bash
# One command for the GPU machine: configure and build (all cores, the GPU's own architecture), run the whole
# ctest suite (cpu and gpu labels), run compute-sanitizer's memcheck over gpu_tests and racecheck over the
# tests of kernels that use shared memory, and print a short table last. Full logs go to $OUT when it is set
# (the device tool brings $OUT back), else to <build>/gpu-check-logs. Exit status 0 only when everything ran
# clean. Fits in one 10-minute call on a 16-core machine.
#
#   scripts/fetch-gpu-deps.sh            once, where apt works: fills .deps/ (carry it to the GPU machine)
#   scripts/gpu-check.sh                 on the GPU machine
#   scripts/gpu-check.sh --bench         the benchmarks instead (scripts/bench.sh, same build directory)
# Environment: BUILD_DIR (default build-gpu), CUDA_ARCH (default: native where a GPU is visible),
# SKIP_SANITIZERS=1, MEMCHECK_TIMEOUT / RACECHECK_TIMEOUT (seconds, default 200 / 150).
#
# Where .deps/root exists it is the first CMake prefix and joins LD_LIBRARY_PATH (the GPU machine has no
# Debian -dev packages). cuDNN and NCCL come from CUDA or the pip packages nvidia-cudnn-cu13 /
# nvidia-nccl-cu13 (cmake/CudaSetup.cmake finds those); if a pip package carries no headers, the copies in
# .deps/cuda-include are used.
set -uo pipefail
if [ "${1:-}" = --bench ]; then exec "$(dirname "$0")/bench.sh"; fi
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-build-gpu}
logs=${OUT:-$build/gpu-check-logs}
mkdir -p "$logs"
jobs=$(nproc)
status=0

have_gpu=0
if nvidia-smi -L >/dev/null 2>&1; then have_gpu=1; fi

source scripts/gpu-build-env.sh  # cmake_args, LD_LIBRARY_PATH (.deps, pip cuDNN/NCCL)

echo "== gpu-check: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no GPU visible')"
echo "== configure ($build): cmake ${cmake_args[*]}"
if ! cmake -S . -B "$build" "${cmake_args[@]}" >"$logs/configure.log" 2>&1; then
  tail -40 "$logs/configure.log"
  echo "gpu-check: configure FAILED (log: $logs/configure.log)"
  exit 1
fi
echo "== build (-j$jobs)"
build_start=$(date +%s)
if ! cmake --build "$build" -j "$jobs" >"$logs/build.log" 2>&1; then
  grep -E "error|FAILED" "$logs/build.log" | head -40
  echo "gpu-check: build FAILED (log: $logs/build.log)"
  exit 1
fi
echo "   built in $(( $(date +%s) - build_start )) s"

# ctest per label; counts from its summary ("N tests failed out of M") and its "(Skipped)" lines.
declare -A row
run_ctest() {
  local label=$1 log=$logs/ctest-$1.log
  ctest --test-dir "$build" -L "$label" --output-on-failure -j "$jobs" --timeout 300 >"$log" 2>&1
  local rc=$?
  local total failed skipped
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  failed=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  skipped=$(grep -c "(Skipped)" "$log")
  total=${total:-0}
  failed=${failed:-0}
  if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then failed="?"; fi
  local passed=$(( total - ${failed//\?/0} - skipped ))
  row[ctest-$label]="$passed $failed $skipped -"
  [ "$rc" = 0 ] || status=1
  grep -E "tests passed|\*\*\*(Failed|Exception|Timeout)|Not Run" "$log" | head -20
}
echo "== ctest -L cpu"
run_ctest cpu
echo "== ctest -L gpu"
run_ctest gpu

# compute-sanitizer over gpu_tests; counts from gtest's summary and the sanitizer's own.
sanitize() {
  local name=$1 tool=$2 filter=$3 limit=$4 log=$logs/$1.log
  local exe=$build/tests/gpu_tests
  timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 99 "$exe" --gtest_filter="$filter" \
    --gtest_brief=1 >"$log" 2>&1
  local rc=$?
  local passed failed skipped errors
  passed=$(sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  failed=$(sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  skipped=$(sed -n 's/.*\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  if [ "$tool" = racecheck ]; then
    errors=$(sed -n 's/.*RACECHECK SUMMARY: \([0-9]*\) hazard.*/\1/p' "$log" | tail -1)
  else
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
  fi
  if [ "$rc" = 124 ]; then errors="timeout(${limit}s)"; fi
  row[$name]="${passed:-0} ${failed:-0} ${skipped:-0} ${errors:-?}"
  [ "$rc" = 0 ] || status=1
  tail -3 "$log"
}
if [ "$have_gpu" = 1 ] && [ "${SKIP_SANITIZERS:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer memcheck (gpu_tests)"
  # The out-of-memory test makes a failing cudaMalloc on purpose, which memcheck reports as an API error.
  sanitize memcheck memcheck "-*OutOfMemory*" "${MEMCHECK_TIMEOUT:-200}"
  echo "== compute-sanitizer racecheck (kernels with shared memory)"
  sanitize racecheck racecheck \
    "*CudaConv2d.Direct*:*CudaBatchNorm2d*:*CudaBias*:*CudaSoftmaxCrossEntropy*:*CudaGlobalAvgPool*" \
    "${RACECHECK_TIMEOUT:-150}"
else
  row[memcheck]="- - - not-run"
  row[racecheck]="- - - not-run"
fi

{
  echo
  printf '%-12s %7s %7s %8s  %s\n' suite passed failed skipped "sanitizer errors"
  for name in ctest-cpu ctest-gpu memcheck racecheck; do
    read -r p f s e <<<"${row[$name]:-- - - -}"
    printf '%-12s %7s %7s %8s  %s\n' "$name" "$p" "$f" "$s" "$e"
  done
  echo "logs: $logs   result: $([ "$status" = 0 ] && echo OK || echo FAILED)"
} | tee "$logs/summary.txt"
exit "$status"
