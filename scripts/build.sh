#!/usr/bin/env bash
# The one build of the README's two commands, in build/: scripts/train.sh builds the programs, scripts/test.sh
# everything, with the same configuration, so the second command reuses what the first compiled.
#  - Release; warnings are errors (Debian 12's gcc 12 is the supported compiler and CI proves the code clean
#    there; ENGINE_WERROR=OFF for another compiler).
#  - CUDA (where nvcc is) for the GPU in this machine when nvidia-smi lists one; else for one architecture,
#    sm_90 (H100/H200): compiling it proves the CUDA code builds, and a GPU machine builds for its own GPU.
#    CUDA_ARCHITECTURES="75;80;86;89;90" (or any list) for a build to carry to other GPUs.
#  - ccache when installed (scripts/install-deps.sh installs it), keyed relative to the clone, so another
#    clone on this machine reuses the objects.
#
#   scripts/build.sh [TARGET...]     the targets (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DENGINE_WERROR="${ENGINE_WERROR:-ON}")
if [ -n "${CUDA_ARCHITECTURES:-}" ]; then
  args+=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHITECTURES")
elif nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  args+=(-DCMAKE_CUDA_ARCHITECTURES=native)
else
  args+=(-DCMAKE_CUDA_ARCHITECTURES=90)
fi
if command -v ccache >/dev/null && [ "${CCACHE_DISABLE:-0}" != 1 ]; then
  export CCACHE_BASEDIR=$PWD
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

cmake -S . -B build "${args[@]}" > /dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "${JOBS:-$(nproc)}" "${targets[@]}"
