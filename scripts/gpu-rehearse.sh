#!/usr/bin/env bash
# Rehearses the GPU machine's plan HERE, on a machine as bare as the lent one: a Debian 12 chroot with the
# compilers, CMake, ninja and Python, but none of the Debian -dev packages the build uses, so the build can only
# succeed from .deps-pack (scripts/fetch-gpu-deps.sh), and nothing finds a library through LD_LIBRARY_PATH.
# CUDA comes from this machine (/usr/local/cuda, bind-mounted), as the image has its own. Without a GPU,
# `build` is the dry run of call 1: configure, build, the CPU tests, and a table saying the GPU parts skipped;
# calls 2-4 print their tables (the GPU steps skipped) in seconds.
#
#   scripts/gpu-rehearse.sh [build|bench|cifar|sanitize]     one call (default: build)
#   scripts/gpu-rehearse.sh all                              the four calls in the plan's order, each seeing
#                                                            only the data pieces carried so far (as on the
#                                                            machine), then scripts/gpu-plan.sh's sizes
#
# Needs root; installs debootstrap itself where missing (apt-get: only a rehearsal needs it, so it is not in
# scripts/install-deps.sh) and makes the chroot once (CHROOT, default /var/tmp/gpu-rehearsal-chroot, about
# 700 MB). Runs in a private mount namespace (unshare -m), so its bind mounts vanish with it. .deps is removed
# first and unpacked from the pack, and CIFAR-10's unpacked copy too, as on a fresh machine. Environment:
# BUILD_DIR (default build-rehearsal), CUDA_ARCH (default 90: one architecture), BUDGET (default 5400 for
# every call; BUDGET=plan keeps each call's own, as on the machine) and LIMIT_SCALE (default 15): two shared
# cores build and test far slower than sixteen.
set -euo pipefail
# One compound command, which bash reads whole before running it: editing this file during a rehearsal (an
# hour) cannot change the running one.
{
cd "$(dirname "$0")/.."
root=$PWD
chroot_dir=${CHROOT:-/var/tmp/gpu-rehearsal-chroot}
cuda=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
what=${1:-build}
[ "$(id -u)" = 0 ] || { echo "gpu-rehearse: needs root (chroot, mounts)" >&2; exit 2; }
case "$what" in build | bench | cifar | sanitize | all) ;; *)
  echo "usage: scripts/gpu-rehearse.sh [build|bench|cifar|sanitize|all]" >&2
  exit 2
  ;;
esac
[ -f .deps-pack/deps.tar.xz ] || bash scripts/fetch-gpu-deps.sh
ls .gpu-data/part4/mnist .gpu-data/cifar-xz{1,2,3}/cifar10.tar.xz.* >/dev/null 2>&1 || bash scripts/gpu-data.sh pack

if [ ! -x "$chroot_dir/usr/bin/cmake" ]; then
  if ! command -v debootstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
  fi
  debootstrap --variant=minbase --include=g++,make,cmake,ninja-build,python3,file,binutils,xz-utils,procps \
    bookworm "$chroot_dir" http://deb.debian.org/debian
fi

# in_chroot CALL: gpu-check.sh CALL in the chroot, with an empty environment.
in_chroot() {
  unshare -m bash -s -- "$chroot_dir" "$root" "$cuda" "$1" <<'INNER'
set -euo pipefail
chroot_dir=$1 root=$2 cuda=$3 call=$4
mount --make-rprivate /
for d in /proc /sys /dev "$root" "$cuda"; do
  mkdir -p "$chroot_dir$d"
  mount --rbind "$d" "$chroot_dir$d"
done
mount -t tmpfs tmpfs "$chroot_dir/tmp"
ln -sfn "$cuda" "$chroot_dir/usr/local/cuda"
budget=()
[ "${BUDGET:-}" = plan ] || budget=(BUDGET="${BUDGET:-5400}")
exec chroot "$chroot_dir" env -i HOME=/root PATH="/usr/local/cuda/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  CUDA_ARCH="${CUDA_ARCH:-90}" BUILD_DIR="${BUILD_DIR:-build-rehearsal}" "${budget[@]}" \
  LIMIT_SCALE="${LIMIT_SCALE:-15}" \
  bash "$root/scripts/gpu-check.sh" "$call"
INNER
}

rm -rf .deps .gpu-data/cifar-unpacked .gpu-data/merged
if [ "$what" != all ]; then
  in_chroot "$what"
  exit
fi

# The whole plan: CIFAR-10's pieces wait in .gpu-data/held and join as the calls carry them (call 1 piece 1,
# call 2 piece 2, call 3 piece 3), so call 3 unpacks them as on the machine. Every call must end in its table.
held=.gpu-data/held
mkdir -p "$held"
for i in 2 3; do [ ! -d ".gpu-data/cifar-xz$i" ] || mv ".gpu-data/cifar-xz$i" "$held/"; done
give_back_held() { # the pieces a call did not reach go back where gpu-plan.sh looks
  for i in 2 3; do [ ! -d "$held/cifar-xz$i" ] || mv "$held/cifar-xz$i" .gpu-data/; done
  rmdir "$held" 2>/dev/null || true
}
trap give_back_held EXIT
report=()
n=0
for call in build bench cifar sanitize; do
  n=$((n + 1))
  [ ! -d "$held/cifar-xz$n" ] || mv "$held/cifar-xz$n" .gpu-data/
  t0=$(date +%s)
  rc=0
  in_chroot "$call" || rc=$?
  summary=${BUILD_DIR:-build-rehearsal}/gpu-logs/$call/summary.txt
  ended="no table"
  if [ -f "$summary" ] && [ "$(find "$summary" -newermt "@$t0" | wc -l)" = 1 ] &&
    tail -1 "$summary" | grep -q '^next: '; then
    ended="table, then: and next: lines"
  fi
  report+=("$(printf 'call %d %-9s status %d in %4d s; %s' "$n" "$call" "$rc" "$(($(date +%s) - t0))" "$ended")")
done
echo
echo "gpu-rehearse all:"
printf '  %s\n' "${report[@]}"
bash scripts/gpu-plan.sh | grep -E "^call|sends:"
exit
}
