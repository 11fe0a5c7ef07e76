#!/usr/bin/env bash
# Debian's oneDNN (the engine's, 2.x) against a oneDNN 3.x from PyPI on the same convolutions (issue 43 item 5):
# benchmarks/onednn_versions/conv_versions.cpp built once against each library, run alternately in rounds, the
# lower of the rounds' minima kept per (shape, direction), then one table: both libraries' ms, their ratio and
# each one's implementation. Nothing of the engine is built or changed: the question is only whose kernels are
# faster on this host.
#
#   benchmarks/onednn_versions.sh
# Environment: ROUNDS (default 2), REPS (timed calls per round, default 8), THREADS (default 2), PRECISIONS
# (default "bf16 f32"), ONEDNN3_DIR (where PyPI's onednn-cpu-gomp and onednn-devel-cpu-gomp wheels are
# downloaded and unpacked; default ~/.cache/cnn_engine/onednn3; needs the network the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-2} reps=${REPS:-8} threads=${THREADS:-2} precisions=${PRECISIONS:-"bf16 f32"}
dir=${ONEDNN3_DIR:-$HOME/.cache/cnn_engine/onednn3}
python=$(command -v python3)
[ -x "$HOME/.cache/cnn_engine/torch-venv/bin/python" ] && python=$HOME/.cache/cnn_engine/torch-venv/bin/python

if [ ! -f "$dir/include/oneapi/dnnl/dnnl.hpp" ]; then
  mkdir -p "$dir/wheels"
  if ! "$python" -m pip download --no-deps --only-binary :all: -d "$dir/wheels" \
    onednn-cpu-gomp onednn-devel-cpu-gomp >"$dir/pip.log" 2>&1; then
    echo "onednn_versions: could not download oneDNN 3.x from PyPI (onednn-cpu-gomp, onednn-devel-cpu-gomp) into" \
      "$dir/wheels; is PyPI reachable? pip said:" >&2
    tail -3 "$dir/pip.log" >&2
    exit 1
  fi
  for w in "$dir"/wheels/*.whl; do "$python" -m zipfile -e "$w" "$dir/unpacked"; done
  cp -r "$dir"/unpacked/onednn_devel_cpu_gomp-*.data/data/include "$dir/include"
  mkdir -p "$dir/lib" && cp -a "$dir"/unpacked/onednn_cpu_gomp-*.data/data/lib/libdnnl.so* "$dir/lib/"
fi

src=benchmarks/onednn_versions/conv_versions.cpp
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 "$src" -ldnnl -o "$work/v2"
g++ -O2 -std=c++17 -I"$dir/include" "$src" -L"$dir/lib" -Wl,-rpath,"$dir/lib" -ldnnl -o "$work/v3"

echo "host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $threads threads, OMP_WAIT_POLICY=passive;" \
  "$rounds rounds of $reps timed calls, the lower minimum kept"
export OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=passive
for p in $precisions; do
  for r in $(seq "$rounds"); do
    order="v2 v3"
    [ $((r % 2)) = 0 ] && order="v3 v2"  # alternate which runs first
    for v in $order; do "$work/$v" "$p" "$reps" >"$work/$p.$v.$r"; done
  done
  echo
  head -1 "$work/$p.v2.1"
  head -1 "$work/$p.v3.1"
  echo "| shape | direction | 2.x ms | 3.x ms | 2.x / 3.x | 2.x implementation | 3.x implementation |"
  echo "|---|---|---|---|---|---|---|"
  # Each line: 4 words of shape, direction, min, median, implementation.
  cat "$work/$p".v2.* | awk -v tag=v2 'NR > 0 && NF >= 8 { print tag, $0 }' >"$work/$p.all"
  cat "$work/$p".v3.* | awk -v tag=v3 'NF >= 8 { print tag, $0 }' >>"$work/$p.all"
  awk '$2 != "oneDNN" {
    key = $2 " " $3 " " $4 " " $5 "|" $6
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if (!((key, $1) in best) || $7 < best[key, $1]) { best[key, $1] = $7; impl[key, $1] = $9 }
  } END {
    for (i = 1; i <= n; i++) {
      k = order[i]; split(k, parts, "|")
      printf "| %s | %s | %.2f | %.2f | %.2f | %s | %s |\n", parts[1], parts[2], best[k, "v2"], best[k, "v3"],
        best[k, "v2"] / best[k, "v3"], impl[k, "v2"], impl[k, "v3"]
    }
  }' "$work/$p.all"
done
