#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the main training job need.
# Used by both README commands and by .ci/run; nothing else may be installed by hand.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git pkg-config curl
  libgtest-dev libgmock-dev libbenchmark-dev
  libstb-dev libturbojpeg0-dev libgloo-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libdnnl-dev
  liblapacke-dev
  clang-format clang-tidy gnuplot-nox
  clang libclang-rt-14-dev
  dataset-fashion-mnist
  openmpi-bin
  iproute2 util-linux python3 python3-venv
  patchelf
  ccache
  libonnx-dev libprotobuf-dev libonnx-testdata protobuf-compiler
)
# Sanitizer runtime for the ASan/UBSan preset (gcc's libasan/libubsan come with build-essential).
# clang + libclang-rt-14-dev: libFuzzer and its sanitizer runtimes, for scripts/fuzz.sh.
# clang-tidy: scripts/clang-tidy.sh (run by scripts/test.sh; the checks are in .clang-tidy).
# liblapacke-dev: LAPACK's eigensolver for the patch-whitening initialisation (layers/patch_whitening.h).
# libturbojpeg0-dev: libjpeg-turbo decodes JPEG (data/jpeg_decoder.h); Debian's stb_image 2.27 reads out of
#   bounds on a JPEG whose scan ends early (nothings/stb#1293), found by tests/fuzz/fuzz_image.
# curl: scripts/download-data.sh and cnn_train --download.
# patchelf: scripts/fetch-gpu-deps.sh gives the GPU machine's .deps libraries their $ORIGIN run paths.
# (debootstrap, for scripts/gpu-rehearse.sh alone, is installed by that script where it runs.)
# ccache: scripts/build.sh compiles through it, so a second clone or a rebuild after a change reuses objects.
# iproute2 (ip, tc), util-linux (unshare), python3 (http.server): tests/hosts/, two hosts made of network
# namespaces, a rate-limited link, and an HTTP data mirror on one of them. python3-venv: PyTorch's virtual
# environment (scripts/install-python-deps.sh), for the tests that check the engine against it.
# libonnx-dev, libprotobuf-dev: onnx.proto's C++ classes and the ONNX checker, for --model FILE.onnx and
#   cnn_export_onnx (layers/onnx/; optional at configure time, like CUDA). libonnx-testdata: ONNX's own node
#   tests (data/node/test_*), run by tests/cpu/onnx_conformance_test.cpp.
# protobuf-compiler: protoc, for TensorBoard's event messages (apps/tensorboard/event.proto; optional at
#   configure time: without it --tensorboard is refused and its tests skip).
# openmpi-bin: mpirun, for the test that launches cnn_train's ranks with it (tests/cpu/cnn_train_launchers_test.cpp).

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
