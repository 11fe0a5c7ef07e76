#!/usr/bin/env bash
# clang-format over every C++/CUDA source the repo tracks (and new ones not yet tracked).
#   scripts/format.sh          rewrite files in place
#   scripts/format.sh --check  list files that differ and fail
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
  '*.h' '*.cpp' '*.cu' '*.cuh' | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files clean"
else
  clang-format -i "${files[@]}"
fi
