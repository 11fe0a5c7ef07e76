#!/usr/bin/env bash
# The main job on a fresh machine (after scripts/install-deps.sh): builds the engine (Release) and trains
# mnist_cnn on Fashion-MNIST from Debian's dataset-fashion-mnist package.
#   - with GPUs (nvidia-smi lists them): the whole training set, 5 epochs, cosine schedule, on every GPU
#     (distributed data parallel, one process per GPU, when there are several);
#   - without: on the CPU, a 12,000-image subset for 2 epochs (batch 64, cosine), 15 s of training on an idle
#     2-core machine (README: the measured times).
# Writes build/train/{metrics.jsonl,curves.png,checkpoints/} (run again, its checkpoints replace the last run's:
# --overwrite, unless --resume or --eval-only is given); the last line printed is the test accuracy. It builds
# every program the README uses (scripts/check-readme.sh checks that).
#
#   bash scripts/train.sh [CNN_TRAIN FLAGS...]   e.g. --epochs 3: flags given here replace the script's own
#                                               (--flag VALUE or --flag=VALUE), others are added
#   TRAIN_DRY_RUN=1 bash scripts/train.sh ...   prints the cnn_train command line instead of building and running
set -euo pipefail
cd "$(dirname "$0")/.."

data=/usr/share/datasets/fashion-mnist
# The flags the user gave ("--epochs 3" or "--epochs=3"): the script's defaults for them are dropped, as
# cnn_train refuses a flag given twice.
given=" "
for arg in "$@"; do
  case $arg in --*) given+="${arg%%=*} " ;; esac
done
# Another dataset: its own folder and model (cnn_train's defaults for it), not Fashion-MNIST's.
case $given in *" --dataset "*) given+="--data-dir --model " ;; esac
case $given in *" --data-dir "*) ;; *) [ -f "$data/t10k-labels-idx1-ubyte.gz" ] || missing=1 ;; esac
if [ "${missing:-0}" = 1 ]; then
  echo "train.sh: Fashion-MNIST not found in $data: run scripts/install-deps.sh (package dataset-fashion-mnist)" >&2
  exit 2
fi

# defaults FLAG VALUE ...: appends each pair to `args` unless the user gave FLAG.
args=()
defaults() {
  while [ $# -gt 0 ]; do
    case $given in *" $1 "*) ;; *) args+=("$1" "$2") ;; esac
    shift 2
  done
}

out=build/train
gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true); fi
defaults --dataset fashion-mnist --data-dir "$data" --model mnist_cnn --metrics "$out/metrics.jsonl" \
         --plot "$out/curves.png" --checkpoint-dir "$out/checkpoints"
# Run again, the script trains again: its checkpoints replace the last run's (cnn_train refuses a new run into
# a folder of checkpoints without --overwrite), unless the user continues or evaluates one.
case $given in *" --resume "* | *" --eval-only "* | *" --overwrite "*) ;; *) args+=(--overwrite) ;; esac
if [ "$gpus" -gt 1 ]; then
  ids=$(seq -s, 0 $((gpus - 1)))
  where="on $gpus GPUs (--gpus $ids: one process each, NCCL)"
  defaults --gpus "$ids" --epochs 5 --batch-size 64 --lr 0.05 --schedule cosine
elif [ "$gpus" = 1 ]; then
  where="on the GPU"
  defaults --epochs 5 --batch-size 64 --lr 0.05 --schedule cosine
else
  where="on the CPU"
  case $given in *" --limit-train "*) ;; *) where+=" (no GPU: a 12,000-image subset, about 15 s on 2 cores)" ;; esac
  case $given in *" --cpu "*) ;; *) args+=(--cpu) ;; esac
  # The GPU recipe's batch and rate: batch 64 runs about 3x the images per second of mnist_cnn's default 16
  # on the CPU, and cosine over 2 epochs reaches ~85% on the subset.
  defaults --limit-train 12000 --limit-test 2000 --epochs 2 --batch-size 64 --lr 0.05 --schedule cosine
fi
args+=("$@")

# The value of FLAG on the final command line (--flag VALUE or --flag=VALUE; the last one given), or "".
value_of() {
  local value="" previous=""
  for arg in "${args[@]}"; do
    [ "$previous" = "$1" ] && value=$arg
    case $arg in "$1="*) value=${arg#*=} ;; esac
    previous=$arg
  done
  echo "$value"
}
dataset=$(value_of --dataset)
model=$(value_of --model)
[ -n "$model" ] || model="cnn_train's default model for $dataset"
how="$model on $dataset $where"

if [ "${TRAIN_DRY_RUN:-0}" = 1 ]; then
  printf '%q ' ./build/apps/cnn_train "${args[@]}"
  echo
  echo "== training $how"
  exit 0
fi
echo "== build (Release) in build/: the programs (scripts/build.sh; scripts/test.sh reuses them)"
bash scripts/build.sh cnn_train cnn_predict cnn_export_onnx cnn_data
mkdir -p "$out"
echo "== training $how"
./build/apps/cnn_train "${args[@]}"
echo "== curves: $out/curves.png, metrics: $out/metrics.jsonl, checkpoints: $out/checkpoints/"
