#!/usr/bin/env bash
# The datasets for the GPU machine, which has no network and takes 64 MiB a call.
#
#   scripts/gpu-data.sh pack [DATA]   HERE (scripts/gpu-plan.sh runs it): from DATA (default /work/shared/data,
#                                     else shared/data beside the repo) make .gpu-data/part4 (MNIST, its four
#                                     official .gz files, 11 MiB) and .gpu-data/cifar-xz1..3: CIFAR-10's raw
#                                     batches in one xz stream (delta filter + LZMA2: 122 MiB instead of the
#                                     .gz files' 162), cut in three pieces of 26, 48 and 48 MiB, each with the
#                                     stream's sha256. Why: the plan's calls 1-3 must bring all of CIFAR-10
#                                     before call 3 uses it, and call 1 also carries .deps-pack and MNIST; as
#                                     .gz files (6 x 27 MiB, at most two beside the tree in a call, one in call
#                                     1) it needs four calls.
#   scripts/gpu-data.sh               THERE (gpu-build-env.sh runs it): once all three pieces are there, checks
#                                     the stream, unpacks it into .gpu-data/cifar-unpacked (each batch gzipped
#                                     again, the name the readers and tests expect), then merges whatever is
#                                     complete into .gpu-data/merged/{cifar10,mnist}: symbolic links, remade
#                                     on every run (idempotent; a piece that arrives later joins). A dataset
#                                     whose files are all there gets a .complete mark; gpu-build-env.sh then
#                                     exports CIFAR10_DIR / MNIST_DIR, and the tests look there too
#                                     (tests/common/environment.h). Prints what is complete and what is missing.
# .gpu-data/part1..3 as /work/shared/data/parts.sh makes them (CIFAR-10's .gz files) are merged too.
set -euo pipefail
cd "$(dirname "$0")/.."
merged=.gpu-data/merged
cifar=cifar10/cifar-10-batches-bin
batches="data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch"

if [ "${1:-}" = pack ]; then
  data=${2:-}
  if [ -z "$data" ]; then
    for d in /work/shared/data ../shared/data shared/data; do [ -d "$d/$cifar" ] && data=$d && break; done
  fi
  [ -n "$data" ] && [ -d "$data/$cifar" ] && [ -d "$data/mnist" ] ||
    { echo "gpu-data: pack: no cifar10/ and mnist/ in '${data:-/work/shared/data}'" >&2; exit 1; }
  rm -rf .gpu-data/part4 .gpu-data/cifar-xz1 .gpu-data/cifar-xz2 .gpu-data/cifar-xz3 .gpu-data/pack.tmp
  mkdir -p .gpu-data/part4/mnist .gpu-data/pack.tmp/$cifar
  cp "$data"/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz .gpu-data/part4/mnist/
  for b in $batches; do gzip -dc "$data/$cifar/$b.bin.gz" >".gpu-data/pack.tmp/$cifar/$b.bin"; done
  cp "$data/$cifar/batches.meta.txt" ".gpu-data/pack.tmp/$cifar/"
  # Delta over 32 bytes (one image row) before LZMA2: a fifth smaller than plain xz on these pixels.
  tar -C .gpu-data/pack.tmp -cf - cifar10 | xz -T1 --delta=dist=32 --lzma2=preset=9 >.gpu-data/pack.tmp/s.xz
  stream=.gpu-data/pack.tmp/s.xz
  total=$(stat -c %s "$stream")
  c1=$((26 * 1048576)) # call 1 carries .deps-pack and MNIST too
  c2=$(((total - c1 + 1) / 2))
  sum=$(sha256sum <"$stream" | cut -d' ' -f1)
  for i in 1 2 3; do mkdir -p ".gpu-data/cifar-xz$i"; echo "$sum $total" >".gpu-data/cifar-xz$i/cifar10.sha256"; done
  head -c "$c1" "$stream" >.gpu-data/cifar-xz1/cifar10.tar.xz.1
  # dd, not tail | head: head's early exit would end tail by SIGPIPE, which pipefail makes this script's end.
  dd if="$stream" of=.gpu-data/cifar-xz2/cifar10.tar.xz.2 bs=1M iflag=skip_bytes,count_bytes skip="$c1" \
    count="$c2" status=none
  tail -c +$((c1 + c2 + 1)) "$stream" >.gpu-data/cifar-xz3/cifar10.tar.xz.3
  rm -rf .gpu-data/pack.tmp
  du -sh .gpu-data/part4 .gpu-data/cifar-xz*
  exit 0
fi

# CIFAR-10 from its three pieces, once they are all there (unpacked once: .complete marks it).
unpacked=.gpu-data/cifar-unpacked
if [ ! -f "$unpacked/.complete" ] && ls .gpu-data/cifar-xz{1,2,3}/cifar10.tar.xz.* >/dev/null 2>&1; then
  read -r want _ <.gpu-data/cifar-xz1/cifar10.sha256
  have=$(cat .gpu-data/cifar-xz1/cifar10.tar.xz.1 .gpu-data/cifar-xz2/cifar10.tar.xz.2 \
    .gpu-data/cifar-xz3/cifar10.tar.xz.3 | sha256sum | cut -d' ' -f1)
  if [ "$have" != "$want" ]; then
    echo "gpu-data: cifar10: the three pieces do not make the stream they were cut from (sha256 $have, not" \
      "$want): pieces of different packs? make them again here (scripts/gpu-data.sh pack) and carry all three"
  else
    rm -rf "$unpacked"
    mkdir -p "$unpacked"
    cat .gpu-data/cifar-xz1/cifar10.tar.xz.1 .gpu-data/cifar-xz2/cifar10.tar.xz.2 .gpu-data/cifar-xz3/cifar10.tar.xz.3 |
      if command -v xz >/dev/null; then xz -dc; else python3 -c 'import lzma, shutil, sys
shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer, 1 << 20)'; fi | tar -C "$unpacked" -xf -
    # The readers take .bin.gz or .bin, but the tests look for test_batch.bin.gz: gzip each (fast, in parallel).
    for b in $batches; do
      if command -v gzip >/dev/null; then gzip -1 -n "$unpacked/$cifar/$b.bin" & else
        python3 -c 'import gzip, os, shutil, sys
with open(sys.argv[1], "rb") as i, gzip.open(sys.argv[1] + ".gz", "wb", compresslevel=1) as o: shutil.copyfileobj(i, o)
os.remove(sys.argv[1])' "$unpacked/$cifar/$b.bin" &
      fi
    done
    wait
    touch "$unpacked/.complete"
    echo "gpu-data: cifar10 unpacked from .gpu-data/cifar-xz1..3 into $unpacked"
  fi
fi
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
    source=$(ls -d .gpu-data/part*/"$f" "$unpacked/$f" 2>/dev/null | head -1 || true)
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
