#!/usr/bin/env bash
# Prepares .deps/ for the GPU machine, which has CUDA, cuDNN and NCCL (the last two as pip packages) but none
# of the Debian -dev packages the build needs and no network. Run it HERE (where apt works); the plan of calls
# (scripts/gpu-plan.sh) carries .deps-pack in the first call, and scripts/gpu-build-env.sh unpacks it there.
#
#   .deps/root/usr/...      the packages' contents (apt-get download + dpkg -x: no root, no install), a CMake
#                           prefix
#   .deps/cuda-include/     cuDNN and NCCL headers from this machine's CUDA, a fallback for a pip cuDNN/NCCL
#                           without headers (gpu-build-env.sh uses them only then)
#   .deps/requires.txt      the newest glibc and libstdc++ symbol versions these libraries need (gpu-check.sh
#                           compares them with the machine's before building) and the packages' versions
#   .deps-pack/deps.tar.xz  all of .deps, xz-compressed (7 MB instead of 48: OpenBLAS is 37 MB of kernels for
#                           every x86 CPU); this is what travels, and gpu-build-env.sh unpacks it there
#
# Self-contained: no environment variable is needed to run what is built from it. Each shared library here
# finds its own needs through an $ORIGIN run path (patchelf), and the engine's binaries find these libraries
# through the run path CMake gives them; so LD_LIBRARY_PATH stays free of .deps (PyTorch and every other
# program keep the image's libraries).
# Small: only what the build and the tests link or include. No static archive where a shared library exists,
# no docs, no googletest sources, no reference BLAS/LAPACK, no pkg-config files.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v patchelf >/dev/null || { echo "fetch-gpu-deps: needs patchelf (apt-get install patchelf)" >&2; exit 1; }

packages=(
  libgtest-dev libgmock-dev                      # GoogleTest/GoogleMock: static libs + CMake config
  libbenchmark-dev libbenchmark1debian           # Google Benchmark
  libfmt-dev libfmt9                             # fmt
  libcli11-dev nlohmann-json3-dev libstb-dev     # header-only (stb: one translation unit defines the code)
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200  # gloo + its runtime needs
  zlib1g-dev zlib1g                              # zlib headers, libz.so and its target
)
# The CPU GEMM library: whichever cmake/Dependencies.cmake asks for (OpenBLAS, or oneDNN, which is replacing it
# in kernels/cpu_fast), with the libraries it loads (libgomp is the image's compiler's, but travels too).
if grep -q 'require_package(OpenBLAS' cmake/Dependencies.cmake; then
  packages+=(libopenblas-pthread-dev libopenblas0-pthread libgfortran5 libquadmath0)
fi
if grep -q 'DNNL_LIBRARY' cmake/Dependencies.cmake; then
  packages+=(libdnnl-dev libdnnl2 libgomp1 ocl-icd-libopencl1)
fi

rm -rf .deps
mkdir -p .deps/debs .deps/root .deps/cuda-include
(cd .deps/debs && apt-get -o APT::Sandbox::User="$(id -un)" download "${packages[@]}" >/dev/null)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done
versions=$(for deb in .deps/debs/*.deb; do dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb"; done)
rm -rf .deps/debs

usr=.deps/root/usr
# Merged /usr as Debian 12 has it: the packages that install into /lib (libnl, zlib) join usr/lib, where the
# run paths below and the linker look (libibverbs needs libnl-3 at link time too).
if [ -d .deps/root/lib ]; then
  cp -a .deps/root/lib/. "$usr/lib/"
  rm -rf .deps/root/lib
fi
lib=$usr/lib/x86_64-linux-gnu
blas=$lib/openblas-pthread

# Trim what no build step reads.
rm -rf "$usr/share/doc" "$usr/share/man" "$usr/share/lintian" "$usr/src" "$usr/share/bug"
# Static archives beside a shared library of the same name: the shared one is linked. (The archives that exist
# only so, GoogleTest's and benchmark_main, stay: their CMake configs name them.)
find .deps/root -name '*.a' | while read -r a; do
  if ls "${a%.a}".so* >/dev/null 2>&1; then rm "$a"; fi
done
find .deps/root -name pkgconfig -type d -prune -exec rm -rf {} +
rm -rf "$blas"/libblas.* "$blas"/liblapack.* "$blas/cmake"  # BLAS/LAPACK alternatives' names; its config below

# Gloo's exported targets name /usr/lib/libgloo.so.0.5.0 absolutely; point them into this prefix.
gloo_targets=$usr/share/cmake/Gloo/GlooTargets-relwithdebinfo.cmake
if [ -f "$gloo_targets" ]; then
  sed -i 's|"/usr/lib/libgloo|"${_IMPORT_PREFIX}/lib/libgloo|g' "$gloo_targets"
fi

# OpenBLAS: Debian's config names /usr paths, and its generic names (libopenblas.so in $lib, cblas.h in
# include/x86_64-linux-gnu) are alternatives made at install time. A config relative to its own place instead,
# where find_package(OpenBLAS CONFIG) looks (<prefix>/lib/<arch>/cmake/openblas).
if [ -d "$blas" ]; then
  blas_version=$(sed -n 's/^libopenblas0-pthread \([0-9.]*\).*/\1/p' <<<"$versions")
  mkdir -p "$lib/cmake/openblas"
  cat >"$lib/cmake/openblas/OpenBLASConfig.cmake" <<'EOF'
# Written by scripts/fetch-gpu-deps.sh: Debian's pthread OpenBLAS, found relative to this file.
get_filename_component(_openblas_prefix "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
set(OpenBLAS_VERSION "@VERSION@")
set(OpenBLAS_INCLUDE_DIRS "${_openblas_prefix}/include/x86_64-linux-gnu/openblas-pthread")
set(OpenBLAS_LIBRARIES "${_openblas_prefix}/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so")
unset(_openblas_prefix)
EOF
  sed -i "s/@VERSION@/$blas_version/" "$lib/cmake/openblas/OpenBLASConfig.cmake"
  cat >"$lib/cmake/openblas/OpenBLASConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$blas_version")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
EOF
fi

# Absolute symlinks (rare in these packages) would point outside the prefix: make them relative.
find .deps/root -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /lib/*) target=/usr$target ;&
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" ".deps/root$target")" "$link" ;;
  esac
done

# Run paths: each library looks beside itself and in $lib for its needs (libgloo in usr/lib needs
# libhiredis and libibverbs from $lib; libopenblas in $lib/openblas-pthread needs libgfortran from $lib).
find .deps/root -type f -name '*.so*' | while read -r so; do
  rel=$(realpath --relative-to="$(dirname "$so")" "$lib")
  patchelf --set-rpath "\$ORIGIN:\$ORIGIN/$rel" "$so"
done

# The fallback headers: cuDNN and NCCL as the CUDA here has them.
cuda_include=${CUDA_HOME:-/usr/local/cuda}/include
cp "$cuda_include"/cudnn*.h "$cuda_include"/nccl*.h .deps/cuda-include/ 2>/dev/null || true

# The newest symbol versions these libraries need from the C and C++ runtimes (the GPU image must have them).
newest() { # PREFIX: the newest version of PREFIX_x.y... that any shared library here needs
  find .deps/root -type f -name '*.so*' -exec objdump -T {} + 2>/dev/null |
    grep -o "($1_[0-9.]*)" | tr -d '()' | sort -uV | tail -1
}
{
  echo "glibc $(newest GLIBC | sed 's/GLIBC_//')"
  echo "glibcxx $(newest GLIBCXX | sed 's/GLIBCXX_//')"
  echo "built-with $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "$versions" | sed 's/^/package /'
} >.deps/requires.txt

rm -rf .deps-pack
mkdir -p .deps-pack
tar -cJf .deps-pack/deps.tar.xz .deps
touch .deps/requires.txt  # newer than the pack: gpu-build-env.sh unpacks only a newer pack
echo "fetch-gpu-deps: $(du -sh .deps-pack/deps.tar.xz | cut -f1) in .deps-pack/deps.tar.xz, $(du -sh .deps | cut -f1) in .deps ($(find .deps -type f | wc -l) files);" \
  "needs $(head -2 .deps/requires.txt | paste -sd' ')"
