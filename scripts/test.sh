#!/usr/bin/env bash
# Builds the engine and runs every test, as CI does: warnings are errors, formatting and clang-tidy (on the
# changed files) are checked, and the CPU tests run again under AddressSanitizer + UndefinedBehaviorSanitizer.
# GPU tests run where a GPU is visible and skip (visibly) where not. Each stage prints its seconds.
#
#   scripts/test.sh            everything
#   SKIP_SANITIZERS=1 scripts/test.sh   without the sanitizer build (faster, for local iteration)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${JOBS:-$(nproc)}
start=$(date +%s)
stage() { echo "== [$(($(date +%s) - start)) s] $*"; }

# ctest on build folder $1 with the rest as its arguments. When tests fail, each failed test's output is
# printed again at the very end: CI keeps the tail of the log, and a failure's own lines are far above it.
run_ctest() {
  local dir=$1
  shift
  if ctest --test-dir "$dir" --output-on-failure "$@"; then return 0; fi
  local failed="$dir/Testing/Temporary/LastTestsFailed.log" log="$dir/Testing/Temporary/LastTest.log"
  echo "== the failed tests' output again (the last 100 lines of each, from $log):"
  while IFS=: read -r _ name; do
    echo "---- $name"
    awk -v t="Testing: $name" 'index($0, t) && substr($0, index($0, t)) == t {on = 1}
                               on {print} on && /^<end of output>/ {exit}' "$log" | tail -n 100
  done < "$failed"
  return 1
}

stage "the Python clients some tests run for real: tensorboard, onnxruntime, PyTorch (scripts/install-python-deps.sh: best effort, they skip without)"
bash scripts/install-python-deps.sh
source scripts/python-env.sh  # ENGINE_TORCHRUN: the PyTorch tests run for real where the venv was made
echo "PyTorch for the tests: ${ENGINE_TORCHRUN:-none (its tests skip)}"

stage "format check (clang-format)"
bash scripts/format.sh --check

stage "build (Release, -Werror) in build/ (scripts/build.sh: the build scripts/train.sh made, completed)"
bash scripts/build.sh

stage "clang-tidy (.clang-tidy's checks) on the files changed since the base (scripts/clang-tidy.sh says why)"
bash scripts/clang-tidy.sh build

stage "tests (ctest: cpu and gpu labels)"
run_ctest build -j "$jobs" --timeout 600
# ONNX's node tests, counted (tests/cpu/onnx_conformance_test.cpp prints the line; ctest's log keeps the output
# of passed tests too): the count is part of CI's output, not only of docs/ONNX_CONFORMANCE.md.
grep -h "^ONNX conformance" build/Testing/Temporary/LastTest.log || echo "ONNX conformance: not run (no libonnx)"

if [ "${SKIP_SANITIZERS:-0}" != "1" ]; then
  # RelWithDebInfo (-O2 -g): sanitizers keep their checks, and the model gradient checks stay fast. Only what
  # the CPU tests run is built (no benchmarks), and the tests whose question is not memory are left to the
  # Release run above, where they already passed: how well a model learns (accuracy thresholds, the airbench94
  # recipe, the time-to-accuracy script: minutes of training each under ASan, through the kernels the gradient
  # and step tests already run under it) and the benchmarks' smoke runs.
  stage "CPU tests under AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/"
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENGINE_WITH_CUDA=OFF -DENGINE_SANITIZE=ON \
        -DENGINE_WERROR=ON "${launcher[@]}" > /dev/null
  # CCACHE_NOHASHDIR: with -g ccache hashes the working folder by default, so every clone (CI's is new each
  # time) missed the cache for this whole build; the objects' debug info then names the folder of the build
  # that filled the cache, which only a debugger would notice.
  CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 cmake --build build-asan -j "$jobs" --target cpu_tests dist_tests \
    dist_test_worker cnn_train cnn_predict
  # The multi-host tests (tests/hosts/: namespaces, time bounds on faults) are not built here either.
  # OnnxRuntimeCifar10 runs 10,000 images through cnn3 twice (3 minutes unsanitized): its kernels and importer
  # are the ones the short ONNX tests run here.
  # CnnTrainIoError LD_PRELOADs an unsanitized EIO library (tests/common/io_error_shim.cpp) ahead of ASan's
  # runtime, which ASan refuses ("ASan runtime does not come first in initial library list"); the paths it
  # fails are the Release run's question.
  # CnnTrainNewcomer.ATraceThatCannotBeWrittenIsAWarning preloads the same library. DiskImages.Memory... compares
  # peak RSS of two datasets: under ASan that measures its quarantine of freed blocks (256 MiB by default), not
  # the loader; the Release run above holds it to 4 MiB.
  not_memory='^CnnTrainAcceptance\.|^OnnxRuntimeCifar10\.|^CnnTrainIoError\.|^CnnTrainRecipe\.Airbench94Learns|^TimeToAccuracyScript\.|\.smoke$|^Host|^hosts_tests_NOT_BUILT$|^CnnTrainNewcomer\.ATraceThatCannotBeWrittenIsAWarning$|^DiskImages\.MemoryDoesNotGrowWithTheDataset$'
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build-asan -L cpu -E "$not_memory" -j "$jobs" --timeout 900
fi

stage "fault campaign smoke (scripts/faults.sh --smoke: kill -9, disk full, I/O errors, corrupt checkpoints, ranks, torchrun, memory)"
bash scripts/faults.sh --smoke  # ~2-4 minutes; the full campaign is run by hand (docs/ARCHITECTURE.md)

stage "fuzz (dataset readers under libFuzzer)"
FUZZ_SECONDS=${FUZZ_SECONDS:-12} bash scripts/fuzz.sh  # ~1.5 minutes of fuzzing in all

stage "all tests passed"
