#!/usr/bin/env bash
# The plan of calls for a lent GPU machine (docs/ARCHITECTURE.md, "The GPU machine"), run HERE before the
# calls: it prepares what travels and prints, for each call, the device tool's command, timeout and carry list,
# and the size that call sends (the tree + what it carries) against the tool's 64 MiB limit.
#
#   scripts/gpu-plan.sh        prepare (.deps-pack by scripts/fetch-gpu-deps.sh, the data by scripts/gpu-data.sh
#                              pack, where missing) and print the four calls; status 1 if one is over
#   scripts/gpu-plan.sh N      print call N alone (1-4)
#
# The order puts the most valuable signal first: the build and the GPU tests, the benchmark table beside
# PyTorch, CIFAR-10's accuracy and time to 94%, the sanitizers last. Budgets (gpu-check.sh) 300 + 380 + 320 +
# 180 s. The first GPU run (2026-11-28, H200, 15 minutes of device time) made all four calls: a start and a
# transfer cost about 30 s, the build 123 s at -j16, the GPU tests 95 s, the bench 207 s, CIFAR-10 61 s, the
# sanitizers 54 s (BUDGET trimmed on calls 2-4 as the last lines printed say).
# What a call carries stays on the machine while it is warm (ignored paths are kept between calls), so
# CIFAR-10's three pieces travel in calls 1-3 and call 3 finds all of them. Sizes: the tracked and
# untracked-not-ignored files (what the tool sends of the tree, shared/ included) plus the carried paths, in MiB
# of 2^20 bytes.
#
# First-GPU-run watch list: what a reading of the CUDA code could not decide without a device (session 11's
# reading; read it when a call's table shows a failure, before looking further):
#  1. bf16 convolutions whose C is not a multiple of 8 (the first layer, C = 3), both layouts:
#     conv2d_cudnn.cpp acceptable() refuses candidates cuDNN reports with CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
#     for bf16 data. If cuDNN 9's legacy API offers nothing else for such a shape, the step fails with
#     "conv2d_cudnn: no usable bfloat16 ... algorithm ... candidates:" listing each one's math type
#     (CudaNhwc.Vgg6Bf16TrainingStepMatchesNchw, the bf16 autocast tests, cnn_train --precision bf16).
#     First GPU run (H200, cuDNN 9.19): those passed and bf16 trained; cuDNN reported CUDNN_DEFAULT_MATH for
#     the bf16 algorithms it chose (CudaBf16Conv2d.ChosenAlgorithmsUseTensorOpMath expected TENSOR_OP).
#  2. Deterministic search (cnn_train --deterministic, the tests' default handles) on grouped, depthwise and
#     dilated shapes: pick() keeps CUDNN_DETERMINISTIC algorithms only; cuDNN may have none for a
#     depthwise dW. Same message, "deterministic=true" in it (CudaNhwc.GroupedAndDilatedConv2dRunOnCudnn).
#     First GPU run: that test passed.
#  3. An aarch64 host (GH200): gcc contracts a*b+c into an FMA by default there, and the CPU references that
#     the GPU tests compare bit for bit (cpu::sgd_step, cpu::ema_update; CudaSgd.*, CudaEma.*) assume no
#     contraction: kernels/CMakeLists.txt builds the references with -ffp-contract=off. A bitwise failure on
#     an ARM host only: check that flag reached the reference code (a header-only template would escape it).
#  4. A DDP step captured into a CUDA graph may make a marker inside the capture when the supervisor has no
#     spare (dist/comm_supervisor.cpp collective() -> make_marker()); CudaEventMarker makes its CUDA event on
#     its first record outside a capture, so no cudaEventCreate runs there. If a capture still fails naming
#     an event call, look at the reducer's own fork/join events. One GPU runs that path in a world of one
#     (CnnTrainDdpGpu.NcclWorldOfOneCapturedStepsEqualEagerSteps); the two-rank graph test needs two GPUs.
#     First GPU run: not reached (the test's tiny image folder took the staged loader, which refuses graphs).
set -euo pipefail
cd "$(dirname "$0")/.."
only=${1:-}
limit_mib=64

if [ ! -f .deps-pack/deps.tar.xz ]; then bash scripts/fetch-gpu-deps.sh; fi
if ! ls .gpu-data/part4/mnist .gpu-data/cifar-xz{1,2,3}/cifar10.tar.xz.* >/dev/null 2>&1; then
  bash scripts/gpu-data.sh pack
fi

bytes_of() { # PATH...: apparent bytes of the files under them
  [ $# = 0 ] && { echo 0; return; }
  find "$@" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}
tree_bytes=$( { git ls-files -z --cached --others --exclude-standard 2>/dev/null || true; } |
  xargs -0 -r stat -c '%s' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

commands=("" "bash scripts/gpu-check.sh build" "bash scripts/gpu-check.sh bench"
  "bash scripts/gpu-check.sh cifar" "bash scripts/gpu-check.sh sanitize")
# Each call's budget (gpu-check.sh: 450, 380, 320, 180 s) + 30 s: the table prints within the budget; the
# tool's limit only stops a call that hangs.
timeouts=("" 330 410 350 210)
# .whl holds airbench94.py (call 3 runs it beside our time to 94%; benchmarks/time_to_accuracy.sh says where it
# comes from); without it call 3 skips that step, so it is optional here.
carries=("" ".deps-pack .gpu-data/part4 .gpu-data/cifar-xz1" ".gpu-data/cifar-xz2" ".gpu-data/cifar-xz3 .whl" "")
optional=".whl"
what=("" "probe, build, ctest -L gpu, mnist_cnn 3 epochs (MNIST: part4); CPU_TESTS=1 adds ctest -L cpu"
  "scripts/bench.sh on call 1's binaries: our img/s beside PyTorch's (carries CIFAR-10 piece 2)"
  "CIFAR-10 (piece 3 completes it): reader tests, vgg6 15 epochs (>= 88%), PyTorch checks, time to 94% beside airbench94.py"
  "compute-sanitizer on tests/sanitize's small cases")

over=0
echo "gpu-plan: tree $(mib "$tree_bytes") MiB (tracked + untracked-not-ignored); limit $limit_mib MiB a call."
echo "Make the four calls BACK TO BACK, with NO ANALYSIS IN BETWEEN: a machine idle 30 s is given back with the"
echo "build. With 15 minutes of device time, all four fit with calls 2-4 trimmed (below). Each call ends in a table whose 'then:' line names"
echo "the next call and whose 'next:' line says what the next GPU run should start with; read them all at the end."
for n in 1 2 3 4; do
  [ -n "$only" ] && [ "$only" != "$n" ] && continue
  read -r -a paths <<<"${carries[$n]}"
  missing=()
  for p in "${paths[@]}"; do [ -e "$p" ] || [ "$p" = "$optional" ] || missing+=("$p"); done
  present=()
  for p in "${paths[@]}"; do [ -e "$p" ] && present+=("$p"); done
  paths=("${present[@]}")
  total=$((tree_bytes + $(bytes_of "${paths[@]}")))
  verdict="ok"
  if [ "$total" -gt $((limit_mib * 1048576)) ]; then verdict="OVER THE LIMIT"; over=1; fi
  if [ ${#missing[@]} -gt 0 ]; then verdict="MISSING ${missing[*]}"; over=1; fi
  carry_json=""
  [ ${#paths[@]} = 0 ] || carry_json=$(printf '"%s",' "${paths[@]}")
  echo
  echo "call $n: ${what[$n]}"
  echo "  command:   ${commands[$n]}"
  echo "  timeout_s: ${timeouts[$n]}"
  echo "  carry:     [${carry_json%,}]"
  echo "  sends:     $(mib "$total") MiB ($verdict)"
done
echo
echo "If the device tool's status shows less time left than a call's timeout_s + 60, run it as"
echo "BUDGET=<budget_left_s - 90> bash scripts/gpu-check.sh ... so that its table still prints."
echo "When a table shows a failure, read the first-GPU-run watch list at the top of scripts/gpu-plan.sh."
exit "$over"
