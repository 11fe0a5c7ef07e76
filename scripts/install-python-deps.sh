#!/usr/bin/env bash
# The Python clients some tests run for real (each test skips, saying so, where its module does not import):
#   tensorboard   its EventAccumulator reads cnn_train --tensorboard's event files (tests/python/)
#   onnxruntime   runs the models --export-onnx writes, beside the engine's own logits
# Installed from PyPI into the python3 on PATH, by scripts/test.sh (training needs neither). Best effort: without network, or on a python that refuses
# pip (Debian's own python3 is "externally managed"), it says so and the tests that need them skip.
# PyTorch is not installed here (several GB); tests/common/pytorch_tools.h says how to enable those tests.
set -uo pipefail

modules=(tensorboard onnxruntime)
missing=()
for m in "${modules[@]}"; do
  python3 -c "import $m" 2>/dev/null || missing+=("$m")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-python-deps: ${modules[*]} already import"
  exit 0
fi
echo "install-python-deps: pip install ${missing[*]} into $(python3 -c 'import sys; print(sys.prefix)')"
if ! python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${missing[@]}"; then
  echo "install-python-deps: WARNING: pip could not install ${missing[*]}; the tests that need them will skip"
fi
exit 0
