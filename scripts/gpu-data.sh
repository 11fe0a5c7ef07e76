#!/usr/bin/env bash
# Merges the data parts that travelled to the GPU machine (.gpu-data/part1..part4, made here by
# `/work/shared/data/parts.sh .gpu-data`: CIFAR-10 in parts 1-3, MNIST in part 4; one part per call, as
# scripts/gpu-plan.sh plans) into .gpu-data/merged/{cifar10,mnist}: symbolic links to the parts' files,
# remade on every run (idempotent; a part that arrives later joins). A dataset whose files are all there gets
# a .complete mark; scripts/gpu-build-env.sh then exports CIFAR10_DIR / MNIST_DIR, and the tests look there
# too (tests/common/environment.h). Prints what is complete and what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
merged=.gpu-data/merged
cifar=cifar10/cifar-10-batches-bin
declare -A files=(
  [cifar10]="$cifar/data_batch_1.bin.gz $cifar/data_batch_2.bin.gz $cifar/data_batch_3.bin.gz
             $cifar/data_batch_4.bin.gz $cifar/data_batch_5.bin.gz $cifar/test_batch.bin.gz
             $cifar/batches.meta.txt"
  [mnist]="mnist/train-images-idx3-ubyte.gz mnist/train-labels-idx1-ubyte.gz mnist/t10k-images-idx3-ubyte.gz
           mnist/t10k-labels-idx1-ubyte.gz"
)
for dataset in cifar10 mnist; do
  rm -f "$merged/$dataset/.complete"
  missing=()
  for f in ${files[$dataset]}; do
    source=$(ls -d .gpu-data/part*/"$f" 2>/dev/null | head -1 || true)
    if [ -z "$source" ]; then
      missing+=("$(basename "$f")")
      continue
    fi
    mkdir -p "$merged/$(dirname "$f")"
    ln -sfn "$(realpath "$source")" "$merged/$f"
  done
  if [ ${#missing[@]} = 0 ]; then
    touch "$merged/$dataset/.complete"
    echo "gpu-data: $dataset complete in $merged/$dataset"
  else
    echo "gpu-data: $dataset incomplete: ${missing[*]} not carried yet"
  fi
done
