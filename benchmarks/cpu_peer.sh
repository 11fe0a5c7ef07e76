#!/usr/bin/env bash
# The CPU device against PyTorch on the CPU (issue 19), measured side by side: for each round and model,
# train_bench --cpu and benchmarks/pytorch/train_peer.py --cpu run back to back (their order alternates between
# rounds, so a drift in the machine's load does not favour one side), same model, batch, threads and step
# counts, random data. Prints one table last: per model and round, both images/s and their ratio.
#
#   benchmarks/cpu_peer.sh                     build/ (BUILD_DIR), python3 (PYTHON), 2 rounds, 2 threads
# Environment: BUILD_DIR (default build), PYTHON (a python with torch; default the python of PyTorch's venv that
# scripts/install-python-deps.sh makes, scripts/python-env.sh, else python3), ROUNDS (default 2),
# THREADS (default 2), MODELS (default "mnist_cnn cnn3 vgg6 resnet18"), BATCH (default 64), LOGS (default
# $BUILD_DIR/cpu-peer). PyTorch is not a dependency of the engine: scripts/install-python-deps.sh installs it
# for the tests and this comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
source scripts/python-env.sh
python=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ] && [ -x "$ENGINE_TORCH_VENV/bin/python" ]; then python=$ENGINE_TORCH_VENV/bin/python; fi
rounds=${ROUNDS:-2}
threads=${THREADS:-2}
models=${MODELS:-mnist_cnn cnn3 vgg6 resnet18}
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

ours() {  # model warmup steps round
  OMP_NUM_THREADS=$threads "$bench" --cpu --models "$1" --batches "$batch" --warmup "$2" --steps "$3" \
    --json "$logs/ours.tmp" >>"$logs/ours.log" 2>&1  # train_bench's --json rewrites its file
  cat "$logs/ours.tmp" >>"$logs/ours.r$4.jsonl"
}
theirs() {
  "$python" benchmarks/pytorch/train_peer.py --cpu --threads "$threads" --models "$1" --batches "$batch" \
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

"$python" - "$logs" "$rounds" <<'EOF'
import json, sys
logs, rounds = sys.argv[1], int(sys.argv[2])
def read(path):
    try:
        with open(path) as f:
            return {r["model"]: r for r in map(json.loads, filter(str.strip, f))}
    except FileNotFoundError:
        return {}
print("| model | round | ours img/s | PyTorch img/s | ours / PyTorch |")
print("|---|---|---|---|---|")
for r in range(1, rounds + 1):
    ours, theirs = read(f"{logs}/ours.r{r}.jsonl"), read(f"{logs}/pytorch.r{r}.jsonl")
    for model in dict.fromkeys(list(ours) + list(theirs)):
        a, b = ours.get(model), theirs.get(model)
        fa = f"{a['images_per_s']:.0f}" if a else "-"
        fb = f"{b['images_per_s']:.0f}" if b else "-"
        ratio = f"{a['images_per_s'] / b['images_per_s']:.2f}" if a and b else "-"
        print(f"| {model} | {r} | {fa} | {fb} | {ratio} |")
EOF
