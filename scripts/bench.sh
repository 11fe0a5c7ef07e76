#!/usr/bin/env bash
# The benchmarks on the GPU machine, call 2 of the plan (scripts/gpu-check.sh bench runs this after its guard;
# docs/ARCHITECTURE.md, "The GPU machine"). Builds kernel_bench and train_bench if needed (not where call 1
# built them: see below), then on the same GPU in the same command runs
#   1. kernel_bench          every kernel family, validated against the CPU, against measured ceilings
#   2. train_bench           vgg6 and resnet18 at batch 128 and 512, --precision fp32, tf32 (the default) and
#                            bf16 (where this build's train_bench has it)
#   3. ddp_overlap           the Reducer's timeline of one resnet18 DDP step through NCCL (world size 1: the
#                            bucket all-reduces still run on the communication stream): do they start before
#                            backward ends? (its table is in ddp_overlap.log, for benchmarks/RESULTS.md)
#   4. train_peer.py         the same models in PyTorch: the tutorial pipeline; resident data at the default
#                            precision (the peer of tf32); bf16 autocast + channels_last; and at its best
#                            (bf16 + torch.compile)
# and prints ONE table last: our images/s beside PyTorch's, and the ratios (benchmarks/pytorch/report.py).
# Budget: BUDGET seconds from the start (default 355, so that with gpu-check's guard and packing the call stays
# within its 380 s); every stage has its own limit below, cut to what is left, so the table always prints; a
# stage cut short leaves "-" in its columns. The stage limits add up to about 380 s: the last, PyTorch at its
# best, takes the cut.
# No rebuild after call 1: where call 1's marker (<build>/.call1-built) and both binaries are there, nothing is
# built, since the copy of the tree to the machine may give every source a new time and ninja would then
# recompile the engine inside this budget (BENCH_REBUILD=1 builds anyway).
# Logs and JSON go to BENCH_LOGS (default <build>/gpu-logs/bench; the Markdown entry for benchmarks/RESULTS.md
# is results_entry.md there). Where $OUT is set and this runs on its own, $OUT gets the table, the entry and
# one archive of the logs (the device tool brings back at most 8 files).
#
#   scripts/gpu-check.sh bench        the plan's call 2 (gpu-check's build directory and environment)
#   scripts/bench.sh                  the same, without the guard
# Environment: BUILD_DIR (default build-gpu, gpu-check's), CUDA_ARCH (default: native), STEPS (timed
# training steps, default 30), WARMUP (default 10; PyTorch's best setting gets 2x for torch.compile),
# KERNEL_REPEATS (default 10), BUDGET, SKIP_KERNELS=1, SKIP_PYTORCH=1, CIFAR10_DIR (real data; else random),
# VARIANTS=1 (also tf32 and bf16 NHWC, tf32 and bf16 with --cuda-graph: 120 s more; give BUDGET room).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${BUILD_DIR:-build-gpu}
logs=${BENCH_LOGS:-$build/gpu-logs/bench}
mkdir -p "$logs"
steps=${STEPS:-30}
warmup=${WARMUP:-10}
status=0

# The environment gpu-check.sh sets up: .deps/ (Debian -dev packages the GPU machine lacks) and the pip
# cuDNN/NCCL libraries.
source scripts/gpu-build-env.sh  # cmake_args, LD_LIBRARY_PATH (.deps, pip cuDNN/NCCL)

echo "== bench: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null || echo 'no GPU visible'), commit $(git rev-parse --short HEAD 2>/dev/null)"
# build_benchmarks: configures where needed and builds the three benchmarks (bench.sh on its own, or a build
# that call 1 did not finish).
build_benchmarks() {
  if [ ! -f "$build/build.ninja" ]; then
    if ! cmake -S . -B "$build" "${cmake_args[@]}" >"$logs/configure.log" 2>&1; then
      tail -30 "$logs/configure.log"
      echo "bench: configure FAILED (log: $logs/configure.log)"
      exit 1
    fi
  fi
  if ! cmake --build "$build" -j "$(nproc)" --target kernel_bench train_bench >"$logs/build.log" 2>&1; then
    grep -E "error|FAILED" "$logs/build.log" | head -30
    echo "bench: build FAILED (log: $logs/build.log)"
    exit 1
  fi
  # ddp_overlap is built on its own: if it fails to build, the other benchmarks still run.
  if ! cmake --build "$build" -j "$(nproc)" --target ddp_overlap >"$logs/build_ddp_overlap.log" 2>&1; then
    grep -E "error|FAILED" "$logs/build_ddp_overlap.log" | head -10
    echo "bench: ddp_overlap build FAILED (log: $logs/build_ddp_overlap.log); its stage is skipped"
    overlap_built=0
    status=1
  fi
}

start=$(date +%s)
deadline=$(( start + ${BUDGET:-355} ))
bin=$build/benchmarks
overlap_built=1
if [ "${BENCH_REBUILD:-0}" != 1 ] && [ -f "$build/.call1-built" ] && [ -x "$bin/kernel_bench" ] &&
  [ -x "$bin/train_bench" ]; then
  echo "   call 1's build (commit $(cut -c1-12 "$build/.call1-built")): not rebuilt (BENCH_REBUILD=1 would)"
  if [ ! -x "$bin/ddp_overlap" ]; then
    echo "bench: call 1 built no ddp_overlap; its stage is skipped"
    overlap_built=0
    status=1
  fi
else
  build_benchmarks
fi
echo "   ready in $(( $(date +%s) - start )) s"

# stage NAME LIMIT COMMAND...: runs with a time limit (cut to what is left of the budget, keeping 15 s for the
# table), output to $logs/NAME.log, tail on failure.
stage() {
  local name=$1 limit=$2
  shift 2
  local t0 left
  t0=$(date +%s)
  left=$(( deadline - t0 - 15 ))
  if [ "$left" -lt "$limit" ]; then limit=$left; fi
  if [ "$limit" -le 10 ]; then
    echo "== $name: SKIPPED (budget spent)"
    status=1
    return
  fi
  echo "== $name (limit ${limit}s)"
  timeout "$limit" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  echo "   $name: rc $rc in $(( $(date +%s) - t0 )) s (log: $logs/$name.log)"
  if [ "$rc" != 0 ]; then
    tail -15 "$logs/$name.log"
    status=1
  fi
}

if [ "${SKIP_KERNELS:-0}" != 1 ]; then
  stage kernel_bench 45 "$bin/kernel_bench" --repeats "${KERNEL_REPEATS:-10}" --json "$logs/kernels.json"
  # The kernel table is long (its log and kernels.json keep it); show the device and the ceilings here.
  grep -E "^ceilings|^kernel_bench" "$logs/kernel_bench.log" | head -3
fi
rm -f "$logs/train.jsonl" "$logs/pytorch.jsonl"
precisions="fp32 tf32"
if "$bin/train_bench" --help 2>/dev/null | grep -q bf16; then precisions="$precisions bf16"; fi
for precision in $precisions; do
  # train_bench's --json rewrites its file: one per precision, gathered into train.jsonl.
  stage "train_bench_$precision" 40 "$bin/train_bench" --precision "$precision" --steps "$steps" \
    --warmup "$warmup" --json "$logs/train_$precision.jsonl"
  cat "$logs/train_$precision.jsonl" >>"$logs/train.jsonl" 2>/dev/null
  grep -hE "images/s" "$logs/train_bench_$precision.log"
done

if [ "$overlap_built" = 1 ]; then
  stage ddp_overlap 30 "$bin/ddp_overlap" --nproc 1 --model resnet18 --batch-size 128 --steps 6
  grep -E "^ +[0-9]|^bucket|^backward|^all-reduce" "$logs/ddp_overlap.log" | head -12
fi

if [ "${SKIP_PYTORCH:-0}" != 1 ]; then
  peer=benchmarks/pytorch/train_peer.py
  stage pytorch_tutorial 35 python3 "$peer" --setting tutorial --steps "$steps" --warmup "$warmup" \
    --workers "$(( $(nproc) > 8 ? 8 : $(nproc) ))" --json "$logs/pytorch.jsonl"
  # resident: 4 runs (vgg6 and resnet18 at batch 128 and 512), each a warm-up with cuDNN's benchmark search
  # (up to 7 s on the H200) and the timed steps, after torch's import and CUDA's start; it printed all four
  # rows in 30 s on the H200 (2026-11-28) and was cut there: twice that.
  stage pytorch_resident 60 python3 "$peer" --setting resident --steps "$steps" --warmup "$warmup" \
    --json "$logs/pytorch.jsonl"
  stage pytorch_bf16 30 python3 "$peer" --setting bf16 --steps "$steps" --warmup "$warmup" \
    --json "$logs/pytorch.jsonl"
  stage pytorch_best 90 python3 "$peer" --setting best --steps "$steps" --warmup "$(( 2 * warmup ))" \
    --json "$logs/pytorch.jsonl"
fi

# VARIANTS=1: train_bench in NHWC and with the whole step as a CUDA graph (issue 17), after everything else so
# that the main table is complete; each gets 30 s of what is left of the budget (raise BUDGET for them).
if [ "${VARIANTS:-0}" = 1 ]; then
  for variant in "tf32 nhwc --layout nhwc" "bf16 nhwc --layout nhwc" "tf32 graph --cuda-graph" \
    "bf16 graph --cuda-graph"; do
    read -r precision tag flag value <<<"$variant"
    stage "train_bench_${precision}_$tag" 30 "$bin/train_bench" --precision "$precision" $flag $value \
      --steps "$steps" --warmup "$warmup" --json "$logs/train_${precision}_$tag.jsonl"
    cat "$logs/train_${precision}_$tag.jsonl" >>"$logs/train.jsonl" 2>/dev/null
  done
fi

python3 benchmarks/pytorch/report.py --ours "$logs/train.jsonl" --pytorch "$logs/pytorch.jsonl" \
  --kernels "$logs/kernels.json" --markdown >"$logs/results_entry.md" 2>&1
echo "   total $(( $(date +%s) - start )) s; RESULTS.md entry: $logs/results_entry.md"
python3 benchmarks/pytorch/report.py --ours "$logs/train.jsonl" --pytorch "$logs/pytorch.jsonl" \
  --kernels "$logs/kernels.json" | tee "$logs/summary.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if [ -z "${BENCH_LOGS:-}" ] && [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
  cp "$logs/summary.txt" "$logs/results_entry.md" "$OUT/" 2>/dev/null
  tar -czf "$OUT/bench-logs.tar.gz" -C "$(dirname "$logs")" "$(basename "$logs")"
fi
exit "$status"
