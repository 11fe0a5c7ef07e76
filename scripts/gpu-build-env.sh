# Sourced by scripts/gpu-check.sh and scripts/bench.sh (from the repo root, with $root set): the build setup of
# a GPU machine that lacks Debian's -dev packages (docs/ARCHITECTURE.md, "The GPU machine").
#  - .deps (scripts/fetch-gpu-deps.sh): unpacked from the carried .deps-pack/deps.tar.xz when absent or older;
#    a CMake prefix. Its libraries carry $ORIGIN run paths and the engine's binaries get run paths to them,
#    so .deps never goes on LD_LIBRARY_PATH: PyTorch and every other program keep the image's libraries.
#  - cuDNN / NCCL from pip (nvidia-cudnn-cu13, nvidia-nccl-cu13, PyTorch's own): their lib folders alone go
#    on LD_LIBRARY_PATH (cuDNN dlopens its sub-libraries by name); .deps/cuda-include is the header fallback
#    when a package has none.
#  - ENGINE_ONNX_NODE_TESTS at .deps/onnx-node-tests (ONNX's node tests for the GPU conformance test).
#  - NCCL_IB_DISABLE=1 (no InfiniBand there); CIFAR10_DIR / MNIST_DIR at the merged data parts
#    (scripts/gpu-data.sh) when they are complete.
# Sets the array cmake_args (architectures: $CUDA_ARCH if given, else the GPU present, else CMake's default).
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DENGINE_WERROR=OFF)
if [ -n "${CUDA_ARCH:-}" ]; then
  cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH")
elif nvidia-smi -L >/dev/null 2>&1; then
  cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES=native)
fi

pack=.deps-pack/deps.tar.xz
if [ -f "$pack" ] && { [ ! -f .deps/requires.txt ] || [ "$pack" -nt .deps/requires.txt ]; }; then
  rm -rf .deps
  if command -v xz >/dev/null; then
    tar -xJf "$pack"
  else  # no xz binary: Python's lzma
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall('.')" "$pack"
  fi
  touch .deps/requires.txt
  echo "gpu-build-env: unpacked $pack ($(du -sh .deps | cut -f1))"
fi
if [ -d .deps/root ]; then
  cmake_args+=(-DCMAKE_PREFIX_PATH="$root/.deps/root/usr")
fi
# ONNX's node tests for tests/gpu/onnx_conformance_gpu_test.cpp (no libonnx-testdata there).
if [ -d .deps/onnx-node-tests ]; then export ENGINE_ONNX_NODE_TESTS=$root/.deps/onnx-node-tests; fi

# deps_runtime_check: the newest glibc / libstdc++ / libgomp symbol versions .deps needs (requires.txt) against
# this machine's; prints both and returns 1 with a clear message when they are not met. libgomp does not travel
# (libdnnl uses the compiler's OpenMP runtime, as the engine's -fopenmp code does), so its version counts too.
deps_runtime_check() {
  [ -f .deps/requires.txt ] || { echo "deps: no .deps/requires.txt (run scripts/fetch-gpu-deps.sh here)"; return 1; }
  local need_c need_cxx need_gomp have_c have_cxx have_gomp libstdcxx libgomp ok=0
  need_c=$(sed -n 's/^glibc //p' .deps/requires.txt)
  need_cxx=$(sed -n 's/^glibcxx //p' .deps/requires.txt)
  need_gomp=$(sed -n 's/^gomp //p' .deps/requires.txt)
  have_c=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  libstdcxx=$(${CXX:-g++} -print-file-name=libstdc++.so.6 2>/dev/null)
  have_cxx=$(grep -ao 'GLIBCXX_[0-9][0-9.]*[0-9]' "$libstdcxx" 2>/dev/null | sed 's/GLIBCXX_//' | sort -uV | tail -1)
  libgomp=$(${CXX:-g++} -print-file-name=libgomp.so.1 2>/dev/null)
  have_gomp=$(grep -ao 'GOMP_[0-9][0-9.]*[0-9]' "$libgomp" 2>/dev/null | sed 's/GOMP_//' | sort -uV | tail -1)
  echo "deps: .deps ($(sed -n 's/^built-with //p' .deps/requires.txt)) needs glibc >= $need_c, libstdc++" \
    "GLIBCXX >= $need_cxx, libgomp GOMP >= ${need_gomp:-none}; this machine has glibc ${have_c:-?}," \
    "GLIBCXX ${have_cxx:-?} ($libstdcxx), GOMP ${have_gomp:-?} ($libgomp)"
  if [ -z "$have_c" ] || [ "$(printf '%s\n' "$need_c" "$have_c" | sort -V | head -1)" != "$need_c" ]; then
    echo "deps: FAILED: glibc ${have_c:-unknown} is older than $need_c: Debian 12's libraries cannot load here;" \
      "fetch the packages of a release as old as this machine's OS instead (scripts/fetch-gpu-deps.sh)"
    ok=1
  fi
  if [ -z "$have_cxx" ] || [ "$(printf '%s\n' "$need_cxx" "$have_cxx" | sort -V | head -1)" != "$need_cxx" ]; then
    echo "deps: FAILED: the host compiler's libstdc++ (GLIBCXX ${have_cxx:-unknown}) is older than $need_cxx" \
      "(g++ 12): the .deps libraries built by g++ 12 cannot link here"
    ok=1
  fi
  if [ -n "$need_gomp" ] && { [ -z "$have_gomp" ] ||
    [ "$(printf '%s\n' "$need_gomp" "$have_gomp" | sort -V | head -1)" != "$need_gomp" ]; }; then
    echo "deps: FAILED: the host compiler's libgomp (GOMP ${have_gomp:-unknown}, ${libgomp:-not found}) is" \
      "older than $need_gomp: oneDNN (libdnnl, built by g++ 12) cannot load here"
    ok=1
  fi
  return "$ok"
}

python=$(command -v python3 || true)
for pkg in cudnn nccl; do
  dir=""
  if [ -n "$python" ]; then
    dir=$("$python" -c "import nvidia.$pkg as m; print(list(m.__path__)[0])" 2>/dev/null || true)
  fi
  if [ -n "$dir" ]; then
    case ":${LD_LIBRARY_PATH:-}:" in
      *":$dir/lib:"*) ;;
      *) export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
    esac
    if [ ! -f "$dir/include/$pkg.h" ] && [ -f .deps/cuda-include/$pkg.h ]; then
      var=$(echo "$pkg" | tr '[:lower:]' '[:upper:]')_ROOT
      cmake_args+=(-D"$var"="$root/.deps/cuda-include")
      echo "gpu-build-env: $dir has no include/$pkg.h; using .deps/cuda-include"
    fi
  fi
done
export NCCL_IB_DISABLE=1

# The datasets: the carried parts merged in .gpu-data/merged (the one place the tests and scripts look).
if [ -d .gpu-data ]; then
  bash scripts/gpu-data.sh >/dev/null
  [ -f .gpu-data/merged/mnist/.complete ] && export MNIST_DIR=$root/.gpu-data/merged/mnist
  [ -f .gpu-data/merged/cifar10/.complete ] && export CIFAR10_DIR=$root/.gpu-data/merged/cifar10
fi
