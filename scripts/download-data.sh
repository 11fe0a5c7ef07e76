#!/usr/bin/env bash
# Downloads CIFAR-10 (binary version) and/or MNIST from their official locations into DEST (default: the
# user's cache, ${XDG_CACHE_HOME:-~/.cache}/cnn_engine, data/data_home.h), checks their md5s, and leaves them
# where the readers, cnn_train and cnn_data look by default:
#   DEST/cifar10/cifar-10-binary.tar.gz   (read directly, no need to unpack)
#   DEST/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
# Fashion-MNIST comes from Debian instead: apt-get install dataset-fashion-mnist.
#
#   scripts/download-data.sh [cifar10|mnist|all] [DEST]
#
# cnn_train --download fetches the same files from its own table (data/download.cpp): the URLs, file names and
# md5s here and there must agree (tests/cpu/cnn_train_download_test.cpp parses this script and compares).
set -euo pipefail

what=${1:-all}
cache=${XDG_CACHE_HOME:-}
[[ $cache == /* ]] || cache=$HOME/.cache  # XDG: a relative value is ignored
dest=${2:-$cache/cnn_engine}

fetch() {  # url file md5
  local url=$1 file=$2 md5=$3
  if [ -f "$file" ] && echo "$md5  $file" | md5sum -c --quiet - 2>/dev/null; then
    echo "download-data: $file already present"
    return 0
  fi
  echo "download-data: $url -> $file"
  mkdir -p "$(dirname "$file")"
  if ! curl --fail --location --silent --show-error --connect-timeout 20 --retry 2 -o "$file.part" "$url"; then
    rm -f "$file.part"
    rmdir "$(dirname "$file")" 2>/dev/null || true  # no empty folder left behind
    echo "download-data: could not download $url (no internet access, or the server is down)." >&2
    echo "download-data: fetch it by other means and put it at $file" >&2
    return 1
  fi
  if ! echo "$md5  $file.part" | md5sum -c --quiet -; then
    rm -f "$file.part"
    echo "download-data: $url: md5 mismatch (expected $md5); file removed" >&2
    return 1
  fi
  mv "$file.part" "$file"
}

command -v curl > /dev/null || { echo "download-data: needs curl (apt-get install curl)" >&2; exit 1; }

if [ "$what" = cifar10 ] || [ "$what" = all ]; then
  fetch https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz "$dest/cifar10/cifar-10-binary.tar.gz" \
        c32a1d4ab5d03f1284b67883e8d87530
fi
if [ "$what" = mnist ] || [ "$what" = all ]; then
  # The original site (yann.lecun.com) often refuses downloads; the mirror serves the same files (same md5s).
  for f in train-images-idx3-ubyte:f68b3c2dcbeaaa9fbdd348bbdeb94873 train-labels-idx1-ubyte:d53e105ee54ea40749a09fcbcd1e9432 \
           t10k-images-idx3-ubyte:9fb629c4189551a2d022fa330f9573f3 t10k-labels-idx1-ubyte:ec29112dd5afa0611ce80d1b7f02629c; do
    name=${f%%:*} md5=${f##*:}
    fetch "http://yann.lecun.com/exdb/mnist/$name.gz" "$dest/mnist/$name.gz" "$md5" 2>/dev/null ||
      fetch "https://ossci-datasets.s3.amazonaws.com/mnist/$name.gz" "$dest/mnist/$name.gz" "$md5"
  done
fi
case "$what" in cifar10 | mnist | all) ;; *) echo "usage: $0 [cifar10|mnist|all] [DEST]" >&2; exit 2 ;; esac
echo "download-data: done ($dest)"
