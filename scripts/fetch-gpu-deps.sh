#!/usr/bin/env bash
# Prepares .deps/ for the GPU machine, which has CUDA, cuDNN and NCCL (the last two as pip packages) but none
# of the Debian -dev packages the build needs and no network. Run it HERE (where apt works); then name .deps
# in the device tool's `carry` and run scripts/gpu-check.sh there, which finds .deps/root on its own.
#
#   .deps/debs/          the downloaded .deb files (apt-get download: no root, no install)
#   .deps/root/usr/...   their contents (dpkg -x), used as a CMake prefix and a library path
#   .deps/cuda-include/  cuDNN and NCCL headers from this machine's CUDA, a fallback for a pip cuDNN/NCCL
#                        without headers (gpu-check.sh uses them only then)
#
# Only what the build and the tests link or include: headers, static/shared libraries, CMake configs, and
# the runtime libraries those shared libraries need. Docs and the googletest sources are left out.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  libgtest-dev libgmock-dev                        # GoogleTest/GoogleMock: static libs + CMake config
  libbenchmark-dev libbenchmark1debian             # Google Benchmark
  libfmt-dev libfmt9                               # fmt
  libcli11-dev nlohmann-json3-dev                  # header-only
  libstb-dev libstb0                               # stb_image (headers; libstb0 for the -dev symlink)
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200  # gloo + its runtime needs
  zlib1g-dev zlib1g                                # zlib headers, libz.so symlink and its target
  libarchive-dev libarchive13                      # libarchive
)

rm -rf .deps/debs .deps/root .deps/cuda-include
mkdir -p .deps/debs .deps/root .deps/cuda-include
(cd .deps/debs && apt-get download "${packages[@]}" >/dev/null)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done

# Trim what no build step reads.
rm -rf .deps/root/usr/share/doc .deps/root/usr/share/man .deps/root/usr/share/lintian .deps/root/usr/src
rm -f .deps/root/usr/lib/x86_64-linux-gnu/{libarchive,libz,libstb}.a  # the shared ones are linked

# Gloo's exported targets name /usr/lib/libgloo.so.0.5.0 absolutely; point them into this prefix.
gloo_targets=.deps/root/usr/share/cmake/Gloo/GlooTargets-relwithdebinfo.cmake
if [ -f "$gloo_targets" ]; then
  sed -i 's|"/usr/lib/libgloo|"${_IMPORT_PREFIX}/lib/libgloo|g' "$gloo_targets"
fi

# Absolute symlinks (rare in these packages) would point outside the prefix: make them relative.
find .deps/root -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" ".deps/root$target")" "$link" ;;
  esac
done

# The fallback headers: cuDNN and NCCL as the CUDA here has them.
cuda_include=${CUDA_HOME:-/usr/local/cuda}/include
cp "$cuda_include"/cudnn*.h "$cuda_include"/nccl*.h .deps/cuda-include/ 2>/dev/null || true

# The .debs are not needed once extracted.
rm -rf .deps/debs
echo "fetch-gpu-deps: $(du -sh .deps | cut -f1) in .deps ($(find .deps/root -type f | wc -l) files)"
