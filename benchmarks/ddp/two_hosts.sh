#!/usr/bin/env bash
# DDP across two hosts over a rate-limited link (issue 31): two network namespaces joined by a veth pair,
# each end limited by tc's tbf to RATE, two CPU ranks on each host (gloo). As root.
#   1. ddp_overlap (cnn3, batch 4 per rank) at --bucket-mb 1, 4 and 25: rank 0's timeline of one step (each
#      bucket's size and all-reduce start/end, and how much of it ran before backward ended).
#   2. The bytes on the wire per training step with and without --grad-compression bf16: cnn_train (cnn3 on
#      CIFAR-10 from $CIFAR10_DIR, else cnn_train's default folder) for 2 and for 6 steps, host 0's veth transmit+receive counters; the difference over 4
#      steps cancels the start-up (weight broadcast, replica checks, evaluation).
# Usage: benchmarks/ddp/two_hosts.sh [RATE (tc units, default 1gbit)] [BUILD (default build)]
set -euo pipefail
rate=${1:-1gbit}
build=${2:-build}
[ "$(id -u)" -eq 0 ] || { echo "two_hosts.sh: needs root (network namespaces)" >&2; exit 2; }
p=ddpb$$
cleanup() {
  for k in 0 1; do
    for pid in $(ip netns pids ${p}h$k 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del ${p}h$k 2>/dev/null || true
  done
}
trap cleanup EXIT
for k in 0 1; do ip netns add ${p}h$k; ip -n ${p}h$k link set lo up; done
ip link add ${p}v0 type veth peer name ${p}v1
for k in 0 1; do
  ip link set ${p}v$k netns ${p}h$k
  ip -n ${p}h$k addr add 10.77.0.$((k + 1))/24 dev ${p}v$k
  ip -n ${p}h$k link set ${p}v$k up
  tc -n ${p}h$k qdisc replace dev ${p}v$k root tbf rate "$rate" burst 256kb latency 400ms
done

# Four ranks, two per host: rank r on host r/2. Arguments: port, then the program and its flags.
four_ranks() {
  local port=$1
  shift
  local pids=()
  for r in 0 1 2 3; do
    ip netns exec ${p}h$((r / 2)) env OMP_NUM_THREADS=1 RANK=$r LOCAL_RANK=$((r % 2)) WORLD_SIZE=4 \
      MASTER_ADDR=10.77.0.1 MASTER_PORT="$port" "$@" > "$tmp/rank$r.log" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  if [ $rc -ne 0 ]; then cat "$tmp"/rank*.log >&2; exit 1; fi
}
wire_bytes() {  # host 0's link: bytes sent plus received
  ip -n ${p}h0 -s -j link show dev ${p}v0 |
    python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]; print(s["tx"]["bytes"] + s["rx"]["bytes"])'
}
tmp=$(mktemp -d)
data=()
if [ -n "${CIFAR10_DIR:-}" ]; then data=(--data-dir "$CIFAR10_DIR"); fi

echo "== ddp_overlap, 4 CPU ranks on 2 hosts, link $rate each way"
port=29900
for mb in 1 4 25; do
  four_ranks $((port++)) "$build/benchmarks/ddp_overlap" --cpu --model cnn3 --batch-size 4 --bucket-mb "$mb" --steps 4
  echo "-- --bucket-mb $mb"
  cat "$tmp/rank0.log"
done

echo "== bytes on host 0's link per step (cnn_train, cnn3, CIFAR-10, global batch 16)"
for compression in none bf16; do
  declare -A bytes
  for steps in 2 6; do
    before=$(wire_bytes)
    four_ranks $((port++)) "$build/apps/cnn_train" --cpu --dataset cifar10 "${data[@]}" --model cnn3 --batch-size 4 \
      --epochs 1 --limit-train $((steps * 16)) --limit-test 16 --checkpoint-dir "" --deterministic \
      --grad-compression "$compression"
    bytes[$steps]=$(($(wire_bytes) - before))
  done
  per_step=$(((bytes[6] - bytes[2]) / 4))
  echo "--grad-compression $compression: ${bytes[2]} B for 2 steps, ${bytes[6]} B for 6: $per_step B per step"
done
rm -rf "$tmp"
