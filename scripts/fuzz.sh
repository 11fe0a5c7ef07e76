#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, AddressSanitizer + UndefinedBehaviorSanitizer) in
# build-fuzz/, replays the checked-in seed corpus, then fuzzes each target for a bounded time. An engine::Error
# is a reader's expected answer to bad bytes; a crash, a sanitizer report, a leak or a timeout fails the script
# and leaves the input in build-fuzz/artifacts/.
#
#   scripts/fuzz.sh                       every target (onnx where libonnx-dev is), FUZZ_SECONDS (default 15) each
#   FUZZ_SECONDS=300 scripts/fuzz.sh idx  one target, longer
#   FUZZ_RUNS=1000000 scripts/fuzz.sh     every target for that many executions (scripts/faults.sh), no time limit
#   FUZZ_TIMEOUT=120 ...                  seconds one input may take (default 10): a niced run on busy cores
#                                         waits for a core long enough to pass 10 s of wall clock
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-15}
jobs=${JOBS:-$(nproc)}
targets=("$@")

echo "== fuzz: build (clang, ASan + UBSan + libFuzzer) in build-fuzz/"
mkdir -p build-fuzz
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DENGINE_WITH_CUDA=OFF -DENGINE_SANITIZE=ON -DENGINE_FUZZ=ON -DENGINE_BUILD_TESTS=OFF -DENGINE_WERROR=ON \
      "${launcher[@]}" > build-fuzz/configure.log 2>&1 || { cat build-fuzz/configure.log; exit 1; }
if [ ${#targets[@]} -eq 0 ]; then
  targets=(cifar10 idx gzip image safetensors)
  # The ONNX importer where libonnx-dev is (cmake/OnnxSetup.cmake); said either way.
  if grep -q "ONNX import/export ON" build-fuzz/configure.log; then
    targets+=(onnx)
  else
    echo "== fuzz: no fuzz_onnx (this build has no ONNX: libonnx-dev, libprotobuf-dev)"
  fi
fi
CCACHE_BASEDIR=$PWD cmake --build build-fuzz -j "$jobs" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p build-fuzz/artifacts
for t in "${targets[@]}"; do
  bin=build-fuzz/tests/fuzz/fuzz_$t
  seeds=tests/fuzz/corpus/$t
  how="${seconds}s"
  if [ -n "${FUZZ_RUNS:-}" ]; then how="$FUZZ_RUNS executions"; fi
  echo "== fuzz_$t: replay $(ls "$seeds" | wc -l) seeds, then fuzz $how"
  "$bin" "$seeds"/* > "build-fuzz/fuzz_$t.replay.log" 2>&1 || { cat "build-fuzz/fuzz_$t.replay.log"; exit 1; }
  work=build-fuzz/corpus/$t  # new inputs go here, never into the checked-in seeds
  mkdir -p "$work"
  budget=(-max_total_time="$seconds")
  if [ -n "${FUZZ_RUNS:-}" ]; then budget=(-runs="$FUZZ_RUNS"); fi
  "$bin" "${budget[@]}" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -print_final_stats=1 \
         -artifact_prefix="build-fuzz/artifacts/$t-" "$work" "$seeds" > "build-fuzz/fuzz_$t.log" 2>&1 ||
    { tail -n 60 "build-fuzz/fuzz_$t.log"; echo "fuzz_$t FAILED: input in build-fuzz/artifacts/"; exit 1; }
  grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/fuzz_$t.log" | tr '\n' ' '
  echo
done
echo "== fuzz: ${#targets[@]} targets clean"
