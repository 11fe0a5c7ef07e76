#!/usr/bin/env bash
# The zoo's CPU ops, the engine's fast kernels against PyTorch eager's, at the same shapes (issue 41's "no
# slower than PyTorch's on the same shapes"): for each round and row, build/benchmarks/cpu_op_bench --row and
# benchmarks/pytorch/op_peer.py --row run back to back, their order alternating between rounds (the machine's
# load drifts; neither side is favoured), same threads. Prints the host (lscpu's model, the engine's oneDNN ISA,
# PyTorch's and its oneDNN's versions), the load before and after, and one table: per row the medians over the
# rounds of each side's forward and backward milliseconds and PyTorch's time over the engine's (above 1: the
# engine is faster).
#
#   benchmarks/cpu_op_peer.sh           every row (cpu_op_bench --list), 3 rounds, 2 threads
# Environment: BUILD_DIR (default build), PYTHON (default the venv of scripts/python-env.sh, else python3),
# ROUNDS (default 3), THREADS (default 2), ROWS (default every row).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
source scripts/python-env.sh
python=$ENGINE_PYTHON
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
bench=$build/benchmarks/cpu_op_bench
[[ -x $bench ]] || { echo "cpu_op_peer.sh: $bench not found: build it first (scripts/build.sh cpu_op_bench)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null || { echo "cpu_op_peer.sh: '$python' has no torch (set PYTHON)" >&2; exit 1; }
rows=${ROWS:-$("$bench" --list | cut -f1)}
for row in $rows; do
  "$bench" --list | cut -f1 | grep -qx "$row" || { echo "cpu_op_peer.sh: ROWS: '$row' is not a row of cpu_op_bench --list" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

ours() { OMP_NUM_THREADS=$threads "$bench" --row "$1" >>"$out/ours.jsonl"; }
theirs() { "$python" benchmarks/pytorch/op_peer.py --row "$1" --threads "$threads" >>"$out/theirs.jsonl"; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$rounds"); do
  for row in $rows; do
    if (( round % 2 )); then ours "$row"; theirs "$row"; else theirs "$row"; ours "$row"; fi
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"$python" - "$out" "$threads" "$rounds" "$(lscpu | sed -n 's/^Model name: *//p' | head -1), family $(lscpu | sed -n 's/^CPU family: *//p' | head -1) model $(lscpu | sed -n 's/^Model: *//p' | head -1)" "$load_before" "$load_after" <<'EOF'
import json, statistics, sys
out, threads, rounds, model, before, after = sys.argv[1:]
def read(name):
    rows = {}
    for line in open(f"{out}/{name}.jsonl"):
        r = json.loads(line)
        rows.setdefault(r["row"], []).append(r)
    return rows
ours, theirs = read("ours"), read("theirs")
any_ours = next(iter(ours.values()))[0]
any_theirs = next(iter(theirs.values()))[0]
print(f"host: {model}; engine oneDNN ISA {any_ours['isa']}; PyTorch {any_theirs['torch']} ({any_theirs['onednn']}); "
      f"{threads} threads, {rounds} rounds; load (1/5/15 min) {before} before, {after} after")
print("| row | shape | ours fwd ms | PyTorch fwd ms | PyTorch / ours fwd | ours bwd ms | PyTorch bwd ms | PyTorch / ours bwd |")
print("|---|---|---|---|---|---|---|---|")
med = lambda rs, k: statistics.median(r[k] for r in rs)
for row, rs in ours.items():
    ts = theirs[row]
    of, ob, tf, tb = med(rs, "fwd_ms"), med(rs, "bwd_ms"), med(ts, "fwd_ms"), med(ts, "bwd_ms")
    print(f"| {row} | {rs[0]['shape']} | {of:.3f} | {tf:.3f} | {tf / of:.2f} | {ob:.3f} | {tb:.3f} | {tb / ob:.2f} |")
EOF
