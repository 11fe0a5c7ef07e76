# Sourced by scripts/install-python-deps.sh and scripts/test.sh: where PyTorch's virtual environment lives, and
# the variable the tests find it by (tests/common/pytorch_tools.h: ENGINE_TORCHRUN, the python beside it runs
# the scripts). Outside the clone, so a second clone or the next CI run on the machine reuses it.
ENGINE_TORCH_VENV=${ENGINE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cnn_engine/torch-venv}
if [ -z "${ENGINE_TORCHRUN:-}" ] && [ -x "$ENGINE_TORCH_VENV/bin/torchrun" ]; then
  export ENGINE_TORCHRUN=$ENGINE_TORCH_VENV/bin/torchrun
fi
