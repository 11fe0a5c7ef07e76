#!/usr/bin/env bash
# Builds the engine and runs every test, as CI does: warnings are errors, formatting and clang-tidy (on the
# changed files) are checked, and the CPU tests run again under AddressSanitizer + UndefinedBehaviorSanitizer.
# GPU tests run where a GPU is visible and skip (visibly) where not.
#
#   scripts/test.sh            everything
#   SKIP_SANITIZERS=1 scripts/test.sh   without the sanitizer build (faster, for local iteration)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${JOBS:-$(nproc)}

echo "== format check (clang-format)"
bash scripts/format.sh --check

echo "== build (Release, -Werror) in build/ (scripts/build.sh: the build scripts/train.sh made, completed)"
bash scripts/build.sh

echo "== clang-tidy (.clang-tidy's checks) on the files changed since the base (scripts/clang-tidy.sh says why)"
bash scripts/clang-tidy.sh build

echo "== tests (ctest: cpu and gpu labels)"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600

if [ "${SKIP_SANITIZERS:-0}" != "1" ]; then
  # RelWithDebInfo (-O2 -g): sanitizers keep their checks, and the model gradient checks stay fast.
  echo "== CPU tests under AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENGINE_WITH_CUDA=OFF -DENGINE_SANITIZE=ON \
        -DENGINE_WERROR=ON
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -L cpu --output-on-failure -j "$jobs" --timeout 900
fi

FUZZ_SECONDS=${FUZZ_SECONDS:-12} bash scripts/fuzz.sh  # dataset readers under libFuzzer, ~1.5 minutes in all

echo "== all tests passed"
