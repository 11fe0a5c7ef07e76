#!/usr/bin/env bash
# The plan of calls for a lent GPU machine (docs/ARCHITECTURE.md, "The GPU machine"), run HERE before the
# calls: it prepares what travels and prints, for each call, the device tool's command, timeout and carry list,
# and the size that call sends (the tree + what it carries) against the tool's 64 MiB limit.
#
#   scripts/gpu-plan.sh        prepare (.deps-pack by scripts/fetch-gpu-deps.sh, .gpu-data by the shared data's
#                              parts.sh, where missing) and print the four calls; status 1 if one is over
#   scripts/gpu-plan.sh N      print call N alone (1-4)
#
# What a call carries stays on the machine while it is warm (ignored paths are kept between calls), so each
# CIFAR-10 part travels in its own call and call 4 finds all three. Sizes: the tracked and untracked-not-ignored
# files (what the tool sends of the tree, shared/ included) plus the carried paths, in MiB of 2^20 bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
only=${1:-}
limit_mib=64
parts_script=${PARTS_SH:-/work/shared/data/parts.sh}

if [ ! -f .deps-pack/deps.tar.xz ]; then bash scripts/fetch-gpu-deps.sh; fi
if ! ls -d .gpu-data/part1 .gpu-data/part2 .gpu-data/part3 .gpu-data/part4 >/dev/null 2>&1; then
  if [ -x "$parts_script" ] || [ -f "$parts_script" ]; then
    bash "$parts_script" .gpu-data
  else
    echo "gpu-plan: no .gpu-data/part1..4 and no $parts_script to make them (set PARTS_SH)" >&2
  fi
fi

bytes_of() { # PATH...: apparent bytes of the files under them
  [ $# = 0 ] && { echo 0; return; }
  find "$@" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}
tree_bytes=$( { git ls-files -z --cached --others --exclude-standard 2>/dev/null || true; } |
  xargs -0 -r stat -c '%s' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

commands=("" "bash scripts/gpu-check.sh build" "bash scripts/gpu-check.sh sanitize"
  "bash scripts/gpu-check.sh bench" "bash scripts/gpu-check.sh cifar")
timeouts=("" 540 300 480 420) # each call's budget (gpu-check.sh) + a minute for the tool's start and transfers
carries=("" ".deps-pack .gpu-data/part4" ".gpu-data/part1" ".gpu-data/part2" ".gpu-data/part3")
what=("" "probe, build, every test, mnist_cnn 3 epochs (MNIST: part4)"
  "compute-sanitizer on tests/sanitize (carries CIFAR-10 part1 for call 4)"
  "scripts/bench.sh (carries CIFAR-10 part2)"
  "CIFAR-10 merged (part3 completes it): reader tests, vgg6 15 epochs, PyTorch checks")

over=0
echo "gpu-plan: tree $(mib "$tree_bytes") MiB (tracked + untracked-not-ignored); limit $limit_mib MiB a call;" \
  "run the calls back to back (a machine idle 30 s is gone)"
for n in 1 2 3 4; do
  [ -n "$only" ] && [ "$only" != "$n" ] && continue
  read -r -a paths <<<"${carries[$n]}"
  missing=()
  for p in "${paths[@]}"; do [ -e "$p" ] || missing+=("$p"); done
  total=$((tree_bytes + $(bytes_of "${paths[@]}")))
  verdict="ok"
  if [ "$total" -gt $((limit_mib * 1048576)) ]; then verdict="OVER THE LIMIT"; over=1; fi
  if [ ${#missing[@]} -gt 0 ]; then verdict="MISSING ${missing[*]}"; over=1; fi
  carry_json=$(printf '"%s",' "${paths[@]}")
  echo
  echo "call $n: ${what[$n]}"
  echo "  command:   ${commands[$n]}"
  echo "  timeout_s: ${timeouts[$n]}"
  echo "  carry:     [${carry_json%,}]"
  echo "  sends:     $(mib "$total") MiB ($verdict)"
done
exit "$over"
