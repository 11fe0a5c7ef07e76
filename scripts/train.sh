#!/usr/bin/env bash
# The main job on a fresh machine (after scripts/install-deps.sh): builds the engine (Release) and trains
# mnist_cnn on Fashion-MNIST from Debian's dataset-fashion-mnist package.
#   - with GPUs (nvidia-smi lists them): the whole training set, 5 epochs, cosine schedule, on every GPU
#     (distributed data parallel, one process per GPU, when there are several);
#   - without: on the CPU, a 12,000-image subset for 2 epochs, sized to finish in about a minute on 2 cores.
# Writes build/train/{metrics.jsonl,curves.png,checkpoints/}; the last line printed is the test accuracy.
#
#   bash scripts/train.sh            EXTRA ARGS are passed on to cnn_train, e.g. --epochs 3
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${JOBS:-$(nproc)}
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/t10k-labels-idx1-ubyte.gz" ]; then
  echo "train.sh: Fashion-MNIST not found in $data: run scripts/install-deps.sh (package dataset-fashion-mnist)" >&2
  exit 2
fi

echo "== build (Release) in build/"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$jobs" --target cnn_train cnn_predict

out=build/train
mkdir -p "$out"
common=(--dataset fashion-mnist --data-dir "$data" --model mnist_cnn --metrics "$out/metrics.jsonl"
        --plot "$out/curves.png" --checkpoint-dir "$out/checkpoints")
gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true); fi
if [ "$gpus" -gt 1 ]; then
  ids=$(seq -s, 0 $((gpus - 1)))
  echo "== training mnist_cnn on Fashion-MNIST on $gpus GPUs (--gpus $ids: one process each, NCCL)"
  ./build/apps/cnn_train "${common[@]}" --gpus "$ids" --epochs 5 --batch-size 64 --lr 0.05 --schedule cosine "$@"
elif [ "$gpus" = 1 ]; then
  echo "== training mnist_cnn on Fashion-MNIST on the GPU"
  ./build/apps/cnn_train "${common[@]}" --epochs 5 --batch-size 64 --lr 0.05 --schedule cosine "$@"
else
  echo "== no GPU: training mnist_cnn on a 12,000-image subset of Fashion-MNIST on the CPU (about a minute)"
  ./build/apps/cnn_train "${common[@]}" --cpu --limit-train 12000 --limit-test 2000 --epochs 2 "$@"
fi
echo "== curves: $out/curves.png, metrics: $out/metrics.jsonl, checkpoints: $out/checkpoints/"
