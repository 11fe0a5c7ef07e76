# Sourced by scripts/install-python-deps.sh and scripts/test.sh: where PyTorch's virtual environment lives, and
# the variable the tests find it by (tests/common/pytorch_tools.h: ENGINE_TORCHRUN, the python beside it runs
# the scripts). Outside the clone, so a second clone or the next CI run on the machine reuses it.
ENGINE_TORCH_VENV=${ENGINE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cnn_engine/torch-venv}
if [ -z "${ENGINE_TORCHRUN:-}" ] && [ -x "$ENGINE_TORCH_VENV/bin/torchrun" ]; then
  export ENGINE_TORCHRUN=$ENGINE_TORCH_VENV/bin/torchrun
fi
# The python that runs the benchmarks' PyTorch side (benchmarks/cpu_*peer.sh, cpu_shared.sh): PYTHON where set,
# else the venv's, else python3.
ENGINE_PYTHON=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ] && [ -x "$ENGINE_TORCH_VENV/bin/python" ]; then ENGINE_PYTHON=$ENGINE_TORCH_VENV/bin/python; fi
