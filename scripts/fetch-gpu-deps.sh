#!/usr/bin/env bash
# Prepares .deps/ for the GPU machine, which has CUDA, cuDNN and NCCL (the last two as pip packages) but none
# of the Debian -dev packages the build needs and no network. Run it HERE (where apt works); the plan of calls
# (scripts/gpu-plan.sh) carries .deps-pack in the first call, and scripts/gpu-build-env.sh unpacks it there.
#
#   .deps/root/usr/...      the packages' contents (apt-get download + dpkg -x: no root, no install), a CMake
#                           prefix
#   .deps/onnx-node-tests/  ONNX's node tests of the engine's ops (Debian's libonnx-testdata, a part of it)
#   .deps/cuda-include/     cuDNN and NCCL headers from this machine's CUDA, a fallback for a pip cuDNN/NCCL
#                           without headers (gpu-build-env.sh uses them only then)
#   .deps/requires.txt      the newest glibc, libstdc++ and libgomp symbol versions these libraries need
#                           (gpu-check.sh compares them with the machine's before building), the packages' versions
#   .deps-pack/deps.tar.xz  all of .deps, xz-compressed (12 MiB instead of 64: libdnnl.so alone is 38 MiB of
#                           kernels and JIT generators); this is what travels, gpu-build-env.sh unpacks it there
#
# Self-contained: no environment variable is needed to run what is built from it. Each shared library here
# finds its own needs through an $ORIGIN run path (patchelf), and the engine's binaries find these libraries
# through the run path CMake gives them; so LD_LIBRARY_PATH stays free of .deps (PyTorch and every other
# program keep the image's libraries).
# Small: only what the build and the tests link or include. No static archive where a shared library exists,
# no docs, no googletest sources, no pkg-config files, no CMake config that cannot load here (oneDNN's asks for
# the OpenCL headers; cmake/Dependencies.cmake finds its header and library directly).
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
  libturbojpeg0-dev libturbojpeg0                # libjpeg-turbo's TurboJPEG: the JPEG decoder (data/jpeg_decoder.h)
  # oneDNN (kernels/cpu_fast) and the OpenCL loader libdnnl.so.2 links (its GPU runtime, never used by the CPU
  # path, but the loader must find it). Not libgomp1: its OpenMP runtime is the compiler's (every gcc brings
  # libgomp, and the engine's -fopenmp code links that one); a second, older copy here would shadow it.
  libdnnl-dev libdnnl2 ocl-icd-libopencl1
  # LAPACKE (the whitening initialisation's eigensolver) over Debian's reference LAPACK and BLAS (not
  # OpenBLAS: a 12x12 problem needs no threads) and the Fortran runtime they link.
  liblapacke-dev liblapacke libtmglib3 liblapack3 libblas3 libgfortran5 libquadmath0
  # ONNX in and out (layers/onnx/, the GPU conformance cases) and TensorBoard's event files: libonnx's classes
  # and CMake targets (libonnxifi: a file its targets name), protobuf and protoc (event.proto is compiled).
  libonnx-dev libonnx1 libonnxifi libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32
)

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

# Trim what no build step reads.
rm -rf "$usr/share/doc" "$usr/share/man" "$usr/share/lintian" "$usr/src" "$usr/share/bug"
# Static archives beside a shared library of the same name: the shared one is linked. (The archives that exist
# only so, GoogleTest's and benchmark_main, stay: their CMake configs name them.)
find .deps/root -name '*.a' | while read -r a; do
  if ls "${a%.a}".so* >/dev/null 2>&1; then rm "$a"; fi
done
find .deps/root -name pkgconfig -type d -prune -exec rm -rf {} +
rm -rf "$lib/cmake/dnnl"  # asks for OpenCL's headers (not here); Dependencies.cmake finds oneDNN directly

# Gloo's exported targets name /usr/lib/libgloo.so.0.5.0 absolutely; point them into this prefix.
gloo_targets=$usr/share/cmake/Gloo/GlooTargets-relwithdebinfo.cmake
if [ -f "$gloo_targets" ]; then
  sed -i 's|"/usr/lib/libgloo|"${_IMPORT_PREFIX}/lib/libgloo|g' "$gloo_targets"
fi

# libblas.so.3 and liblapack.so.3 are alternatives Debian links at install time (dpkg -x runs no scripts):
# link the reference ones where liblapacke looks for them.
[ -f "$lib/blas/libblas.so.3" ] && ln -sfn blas/libblas.so.3 "$lib/libblas.so.3"
[ -f "$lib/lapack/liblapack.so.3" ] && ln -sfn lapack/liblapack.so.3 "$lib/liblapack.so.3"

# Absolute symlinks (rare in these packages) would point outside the prefix: make them relative.
find .deps/root -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /lib/*) target=/usr$target ;&
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" ".deps/root$target")" "$link" ;;
  esac
done

# Run paths: each library looks beside itself and in $lib for its needs (libgloo in usr/lib needs
# libhiredis and libibverbs from $lib; libdnnl needs libOpenCL beside it).
find .deps/root -type f -name '*.so*' | while read -r so; do
  rel=$(realpath --relative-to="$(dirname "$so")" "$lib")
  patchelf --set-rpath "\$ORIGIN:\$ORIGIN/$rel" "$so"
done

# Programs the build runs (protoc) find their libraries the same way.
for exe in "$usr"/bin/*; do
  [ -f "$exe" ] && [ "$(head -c 4 "$exe" | tail -c 3)" = ELF ] && patchelf --set-rpath "\$ORIGIN/../lib/x86_64-linux-gnu" "$exe"
done

# ONNX's node tests of the ops the engine imports (tests/common/onnx_node_tests.h picks among them by the ops
# inside; these name prefixes only keep the copy small: ~8 of libonnx-testdata's 27 MiB), for the GPU's
# conformance test; gpu-build-env.sh names the folder in ENGINE_ONNX_NODE_TESTS.
mkdir -p .deps/testdata .deps/onnx-node-tests
(cd .deps/testdata && apt-get -o APT::Sandbox::User="$(id -un)" download libonnx-testdata >/dev/null &&
  dpkg -x ./*.deb .)
node_tests=.deps/testdata/usr/share/libonnx-testdata/data/node
for prefix in conv batchnorm relu gelu maxpool averagepool globalaveragepool flatten reshape gemm matmul add mul \
  dropout identity sce basic_conv div training_dropout; do
  cp -r "$node_tests"/test_"$prefix"* .deps/onnx-node-tests/ 2>/dev/null || true
done
rm -rf .deps/testdata

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
  echo "gomp $(newest GOMP | sed 's/GOMP_//')"
  echo "built-with $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "$versions" | sed 's/^/package /'
} >.deps/requires.txt

rm -rf .deps-pack
mkdir -p .deps-pack
tar -cJf .deps-pack/deps.tar.xz .deps
touch .deps/requires.txt  # newer than the pack: gpu-build-env.sh unpacks only a newer pack
echo "fetch-gpu-deps: $(du -sh .deps-pack/deps.tar.xz | cut -f1) in .deps-pack/deps.tar.xz, $(du -sh .deps | cut -f1) in .deps ($(find .deps -type f | wc -l) files);" \
  "needs $(head -3 .deps/requires.txt | paste -sd' ')"
