# Sourced by scripts/gpu-check.sh and scripts/bench.sh (from the repo root, with $root set): the build setup of
# a GPU machine that lacks Debian's -dev packages. Sets the array cmake_args and extends LD_LIBRARY_PATH:
#  - architectures: $CUDA_ARCH if given, else the GPU present (native);
#  - .deps/root (scripts/fetch-gpu-deps.sh): the carried Debian packages as a CMake prefix and library path;
#  - cuDNN / NCCL from pip (nvidia-cudnn-cu13, nvidia-nccl-cu13): their libraries for the loader (cuDNN
#    dlopens its sub-libraries), and .deps/cuda-include as the header fallback when a package has none.
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DENGINE_WERROR=OFF)
if [ -n "${CUDA_ARCH:-}" ]; then
  cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH")
elif nvidia-smi -L >/dev/null 2>&1; then
  cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES=native)
fi
if [ -d .deps/root ]; then
  deps=$root/.deps/root
  cmake_args+=(-DCMAKE_PREFIX_PATH="$deps/usr")
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/usr/lib:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
python=$(command -v python3 || true)
for pkg in cudnn nccl; do
  dir=""
  if [ -n "$python" ]; then
    dir=$("$python" -c "import nvidia.$pkg as m; print(list(m.__path__)[0])" 2>/dev/null || true)
  fi
  if [ -n "$dir" ]; then
    export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ ! -f "$dir/include/$pkg.h" ] && [ -f .deps/cuda-include/$pkg.h ]; then
      var=$(echo "$pkg" | tr '[:lower:]' '[:upper:]')_ROOT
      cmake_args+=(-D"$var"="$root/.deps/cuda-include")
      echo "gpu-build-env: $dir has no include/$pkg.h; using .deps/cuda-include"
    fi
  fi
done
