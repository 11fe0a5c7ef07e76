#!/usr/bin/env bash
# The CPU device against PyTorch on the CPU (issue 19), measured side by side: for each round and model,
# train_bench --cpu and benchmarks/pytorch/train_peer.py --cpu run back to back (their order alternates between
# rounds, so a drift in the machine's load does not favour one side), same model, batch, threads and step
# counts, random data. Prints one table last: per model and round, both images/s and their ratio.
#
#   benchmarks/cpu_peer.sh                     build/ (BUILD_DIR), python3 (PYTHON), 2 rounds, 2 threads
# Environment: BUILD_DIR (default build), PYTHON (a python with torch; default the python of PyTorch's venv that
# scripts/install-python-deps.sh makes, scripts/python-env.sh, else python3), ROUNDS (default 2),
# THREADS (default 2), MODELS (default "mnist_cnn cnn3 vgg6 resnet18"; torchvision's zoo models that run at 32x32,
# e.g. mobilenet_v2 densenet121, are trained by the engine from their ONNX export, written into $LOGS/zoo), BATCH (default 64), LOGS (default
# $BUILD_DIR/cpu-peer), CONV_ALGO (the engine's --cpu-conv-algo, default auto), PRECISION (fp32, or bf16: the
# engine's --precision bf16 against torch.autocast('cpu', dtype=torch.bfloat16)), LAYOUT (the engine's --layout,
# default auto, its own: nchw16c on AVX-512, else nchw; nchw16c/nchw8c keep its activations in oneDNN's blocked layout between the layers). The table gives the medians
# over the rounds with their range, the host's oneDNN ISA and FMA peak (kernels/cpu_fast/host_probe.h) in its
# heading, and the engine's model FLOPs per second as a share of that peak. PyTorch is not a dependency of the engine: scripts/install-python-deps.sh installs it
# for the tests and this comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
source scripts/python-env.sh
python=$ENGINE_PYTHON
rounds=${ROUNDS:-2}
threads=${THREADS:-2}
models=${MODELS:-mnist_cnn cnn3 vgg6 resnet18}
conv_algo=${CONV_ALGO:-auto}
layout=${LAYOUT:-auto}
precision=${PRECISION:-fp32}
case $precision in fp32) peer_setting=tutorial ;; bf16) peer_setting=bf16 ;;
  *) echo "cpu_peer.sh: PRECISION '$precision': fp32 or bf16" >&2; exit 2 ;; esac
batch=${BATCH:-64}
logs=${LOGS:-$build/cpu-peer}
bench=$build/benchmarks/train_bench
[[ -x $bench ]] || { echo "cpu_peer.sh: $bench not found: build it first (cmake --build $build --target train_bench)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null || { echo "cpu_peer.sh: '$python' has no torch (set PYTHON)" >&2; exit 1; }
mkdir -p "$logs"
rm -f "$logs"/*.jsonl "$logs"/*.log

# Warm-up and timed steps per model: enough steps for a stable median where a step is short, few where it
# is seconds long.
steps_of() {
  case $1 in
    mnist_cnn) echo "3 30" ;;
    cnn3) echo "2 12" ;;
    vgg6) echo "2 6" ;;
    *) echo "1 4" ;;
  esac
}

# The engine's zoo models by name; torchvision's (mobilenet_v2, densenet121, ...) from their ONNX export, written
# once per run as scripts/zoo_table.py writes the zoo table's files (PyTorch trains the same torchvision model).
engine_model() {
  case $1 in
    mnist_cnn | cnn3 | vgg6 | resnet18) echo "$1" ;;
    *) echo "$logs/zoo/$1.onnx" ;;
  esac
}
for model in $models; do
  case $(engine_model "$model") in *.onnx) ;; *) continue ;; esac
  "$python" -c "import sys; sys.path.insert(0, 'scripts'); import zoo_table; sys.exit('$model' not in zoo_table.MODELS or '$model' in zoo_table.SIZES)" || {
    echo "cpu_peer.sh: MODELS: '$model' is neither one of the engine's (mnist_cnn cnn3 vgg6 resnet18) nor a torchvision model of scripts/zoo_table.py that runs at 32x32" >&2; exit 2; }
  mkdir -p "$logs/zoo"
  [[ -f $logs/zoo/$model.onnx ]] || "$python" scripts/zoo_table.py export "$logs/zoo" "$model" >&2
  [[ -f $logs/zoo/$model.onnx ]] || { echo "cpu_peer.sh: PyTorch could not export $model (see $logs/zoo/$model.export_failed)" >&2; exit 1; }
done

ours() {  # model warmup steps round
  OMP_NUM_THREADS=$threads "$bench" --cpu --models "$(engine_model "$1")" --batches "$batch" --warmup "$2" --steps "$3" \
    --cpu-conv-algo "$conv_algo" --precision "$precision" --layout "$layout" \
    --json "$logs/ours.tmp" >>"$logs/ours.log" 2>&1  # train_bench's --json rewrites its file
  cat "$logs/ours.tmp" >>"$logs/ours.r$4.jsonl"
}
theirs() {
  "$python" benchmarks/pytorch/train_peer.py --cpu --setting "$peer_setting" --threads "$threads" \
    --models "$1" --batches "$batch" \
    --warmup "$2" --steps "$3" --json "$logs/pytorch.r$4.jsonl" >>"$logs/pytorch.log" 2>&1
}

for round in $(seq 1 "$rounds"); do
  for model in $models; do
    read -r warmup steps <<<"$(steps_of "$model")"
    echo "round $round: $model (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    if (( round % 2 )); then ours "$model" "$warmup" "$steps" "$round"; theirs "$model" "$warmup" "$steps" "$round"
    else theirs "$model" "$warmup" "$steps" "$round"; ours "$model" "$warmup" "$steps" "$round"; fi
  done
done

"$python" - "$logs" "$rounds" "$precision" "$conv_algo" <<'EOF'
import json, os, statistics, sys
logs, rounds, precision, algo = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def read(path):
    try:
        with open(path) as f:
            # An ONNX model's row is named by its file (logs/zoo/mobilenet_v2.onnx): the model's name.
            return {os.path.basename(r["model"]).removesuffix(".onnx"): r for r in map(json.loads, filter(str.strip, f))}
    except FileNotFoundError:
        return {}
ours = [read(f"{logs}/ours.r{r}.jsonl") for r in range(1, rounds + 1)]
theirs = [read(f"{logs}/pytorch.r{r}.jsonl") for r in range(1, rounds + 1)]
host = next((r for o in ours for r in o.values()), {})
peak = host.get("peak_bf16_gflops" if precision == "bf16" else "peak_fp32_gflops", 0) or 0
print(f"{precision}, engine 3x3 convolutions {algo}; oneDNN {host.get('isa', '?')}, measured peak "
      f"{precision} {peak:.0f} GFLOP/s ({host.get('peak_fp32_gflops_one_thread', 0):.0f} fp32 on one thread)")
print("| model | ours img/s (median, range) | PyTorch img/s | ours / PyTorch (median, range) | ours' model FLOP/s share of peak |")
print("|---|---|---|---|---|")
models = dict.fromkeys(m for o in ours + theirs for m in o)
def med(v):
    return f"{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})" if v else "-"
for m in models:
    a = [o[m]["images_per_s"] for o in ours if m in o]
    b = [t[m]["images_per_s"] for t in theirs if m in t]
    ratios = [o[m]["images_per_s"] / t[m]["images_per_s"] for o, t in zip(ours, theirs) if m in o and m in t]
    rr = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-"
    flops = [o[m]["model_tflop_s"] * 1e3 for o in ours if m in o]
    share = f"{statistics.median(flops) / peak:.0%}" if flops and peak else "-"
    print(f"| {m} | {med(a)} | {med(b)} | {rr} | {share} |")
EOF
