#!/usr/bin/env bash
# The Python clients some tests run for real (each test skips, saying so, where its module does not import):
#   tensorboard   its EventAccumulator reads cnn_train --tensorboard's event files (tests/python/)
#   onnxruntime   runs the models cnn_export_onnx writes, beside the engine's own logits
#   PyTorch       the peer and oracle: checkpoints both ways, the same steps, torchrun (single host, across
#                 network-namespace hosts, elastic), torch.onnx.export; torch, torchvision, safetensors,
#                 numpy and onnx (the exporter needs it) go into a virtual environment of their own (scripts/python-env.sh names it), with
#                 --system-site-packages so its python sees tensorboard and onnxruntime too
# Installed from PyPI, by scripts/test.sh (training needs none of them). Best effort: without network, or on a
# python that refuses pip (Debian's own python3 is "externally managed" for the first two; the venv is not), it
# says so and the tests that need them skip. PyPI's torch for Linux is the CUDA build (about 4.5 GB with its
# nvidia-* wheels, 2-3 minutes here); it runs on the CPU too. ENGINE_SKIP_TORCH=1 leaves PyTorch out.
set -uo pipefail
source "$(dirname "$0")/python-env.sh"

modules=(tensorboard onnxruntime)
missing=()
for m in "${modules[@]}"; do
  python3 -c "import $m" 2>/dev/null || missing+=("$m")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-python-deps: ${modules[*]} already import"
else
  echo "install-python-deps: pip install ${missing[*]} into $(python3 -c 'import sys; print(sys.prefix)')"
  if ! python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${missing[@]}"; then
    echo "install-python-deps: WARNING: pip could not install ${missing[*]}; the tests that need them will skip"
  fi
fi

# The versions the PyTorch tests were last seen passing with (a newer torch may change an exporter's output).
torch_packages=(torch==2.15.0 torchvision==0.29.2 safetensors numpy onnx onnxscript==0.7.2)
if [ "${ENGINE_SKIP_TORCH:-0}" = 1 ]; then
  echo "install-python-deps: ENGINE_SKIP_TORCH=1: PyTorch not installed; its tests will skip"
elif "$ENGINE_TORCH_VENV/bin/python" -c "import torch, torchvision, safetensors, numpy, onnx, onnxscript" 2>/dev/null; then
  echo "install-python-deps: PyTorch already imports in $ENGINE_TORCH_VENV"
else
  echo "install-python-deps: pip install ${torch_packages[*]} into $ENGINE_TORCH_VENV (about 4.5 GB)"
  if ! { python3 -m venv --system-site-packages "$ENGINE_TORCH_VENV" &&
         "$ENGINE_TORCH_VENV/bin/pip" install --quiet --disable-pip-version-check "${torch_packages[@]}"; }; then
    echo "install-python-deps: WARNING: PyTorch could not be installed in $ENGINE_TORCH_VENV; its tests will skip"
  fi
fi
exit 0
