#!/usr/bin/env bash
# The CPU device on a shared machine (issue 43, item 6): mnist_cnn's training speed with and without one busy
# process (`yes > /dev/null`) beside it, measured side by side with PyTorch. Per round, for each load
# (0, then 1 busy process): train_bench --cpu as it runs by default (OpenMP threads waiting passively,
# kernels/cpu_fast/omp_wait.h), train_bench with libgomp's default spinning (GOMP_SPINCOUNT=300000, what it
# ran before), and benchmarks/pytorch/train_peer.py --cpu as it runs by default and with passive waiting
# (its bundled libgomp reads the same variable); their order rotates between rounds. Prints per
# setting and load the median images/s over the rounds with their range, and each loaded median's share of
# the same setting's quiet one. The goal: a busy process costs the engine about the core it takes (at least
# half the quiet speed on 2 cores).
#
#   benchmarks/cpu_shared.sh        BUILD_DIR (default build), ROUNDS (3), THREADS (2), MODEL (mnist_cnn),
#                                   BATCH (64), PYTHON (as cpu_peer.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
source scripts/python-env.sh
python=$ENGINE_PYTHON
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
model=${MODEL:-mnist_cnn}
batch=${BATCH:-64}
logs=$build/cpu-shared
bench=$build/benchmarks/train_bench
[[ -x $bench ]] || { echo "cpu_shared.sh: $bench not found: build it first" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null || { echo "cpu_shared.sh: '$python' has no torch (set PYTHON)" >&2; exit 1; }
mkdir -p "$logs"
rm -f "$logs"/*.jsonl "$logs"/*.log
busy=()
stop_busy() { for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done; busy=(); }
trap stop_busy EXIT

run() {  # setting load
  local out=$logs/$1.load$2.jsonl
  case $1 in
    ours) OMP_NUM_THREADS=$threads "$bench" --cpu --models "$model" --batches "$batch" --warmup 3 --steps 30 \
            --json "$logs/tmp.json" >>"$logs/ours.log" 2>&1 && cat "$logs/tmp.json" >>"$out" ;;
    ours_spin) GOMP_SPINCOUNT=300000 OMP_NUM_THREADS=$threads "$bench" --cpu --models "$model" --batches "$batch" \
                 --warmup 3 --steps 30 --json "$logs/tmp.json" >>"$logs/ours.log" 2>&1 && cat "$logs/tmp.json" >>"$out" ;;
    pytorch_passive) OMP_WAIT_POLICY=passive "$python" benchmarks/pytorch/train_peer.py --cpu --threads "$threads" \
                       --models "$model" --batches "$batch" --warmup 3 --steps 30 --json "$out" >>"$logs/pytorch.log" 2>&1 ;;
    pytorch) "$python" benchmarks/pytorch/train_peer.py --cpu --threads "$threads" --models "$model" --batches "$batch" \
               --warmup 3 --steps 30 --json "$out" >>"$logs/pytorch.log" 2>&1 ;;
  esac
}

settings=(ours ours_spin pytorch pytorch_passive)
for round in $(seq 1 "$rounds"); do
  for load in 0 1; do
    if (( load )); then yes >/dev/null & busy+=($!); fi
    for i in 0 1 2 3; do
      s=${settings[$(( (i + round) % 4 ))]}
      echo "round $round, load $load: $s (loadavg $(cut -d' ' -f1 /proc/loadavg))" >&2
      run "$s" "$load"
    done
    stop_busy
  done
done

"$python" - "$logs" <<'PY'
import json, statistics, sys
logs = sys.argv[1]
def rates(setting, load):
    try:
        with open(f"{logs}/{setting}.load{load}.jsonl") as f:
            return [json.loads(l)["images_per_s"] for l in f if l.strip()]
    except FileNotFoundError:
        return []
print("| setting | no added load: img/s (median, range) | + 1 busy process | with / without |")
print("|---|---|---|---|")
names = {"ours": "engine (passive wait, default)", "ours_spin": "engine, GOMP_SPINCOUNT=300000 (libgomp default)",
         "pytorch": "PyTorch", "pytorch_passive": "PyTorch, OMP_WAIT_POLICY=passive"}
for s in ("ours", "ours_spin", "pytorch", "pytorch_passive"):
    q, l = rates(s, 0), rates(s, 1)
    fmt = lambda v: f"{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})" if v else "-"
    share = f"{statistics.median(l) / statistics.median(q):.2f}" if q and l else "-"
    print(f"| {names[s]} | {fmt(q)} | {fmt(l)} | {share} |")
PY
