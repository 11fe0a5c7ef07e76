#!/usr/bin/env bash
# Rehearses a GPU machine call HERE, on a machine as bare as the lent one: a Debian 12 chroot with the
# compilers, CMake, ninja and Python, but none of the Debian -dev packages the build uses, so the build can only
# succeed from .deps-pack (scripts/fetch-gpu-deps.sh), and nothing finds a library through LD_LIBRARY_PATH.
# CUDA comes from this machine (/usr/local/cuda, bind-mounted), as the image has its own. Without a GPU,
# `build` is the dry run of call 1: configure, build, the CPU tests, and a table saying the GPU parts skipped.
#
#   scripts/gpu-rehearse.sh [build|sanitize|bench|cifar]     default: build
#
# Needs root and debootstrap (apt-get install debootstrap); makes the chroot once (CHROOT, default
# /var/tmp/gpu-rehearsal-chroot, about 700 MB). Runs in a private mount namespace (unshare -m), so its bind
# mounts vanish with it. .deps is removed first and unpacked from the pack, as on the machine. Environment:
# BUILD_DIR (default build-rehearsal), CUDA_ARCH (default 90: one architecture), BUDGET (default 5400) and
# LIMIT_SCALE (default 15): two shared cores build and test far slower than sixteen.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
chroot_dir=${CHROOT:-/var/tmp/gpu-rehearsal-chroot}
cuda=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")
[ "$(id -u)" = 0 ] || { echo "gpu-rehearse: needs root (chroot, mounts)" >&2; exit 2; }
[ -f .deps-pack/deps.tar.xz ] || bash scripts/fetch-gpu-deps.sh

if [ ! -x "$chroot_dir/usr/bin/cmake" ]; then
  command -v debootstrap >/dev/null || { echo "gpu-rehearse: apt-get install debootstrap" >&2; exit 2; }
  debootstrap --variant=minbase --include=g++,make,cmake,ninja-build,python3,file,binutils,xz-utils,procps \
    bookworm "$chroot_dir" http://deb.debian.org/debian
fi

rm -rf .deps
exec unshare -m bash -s -- "$chroot_dir" "$root" "$cuda" "${1:-build}" <<'INNER'
set -euo pipefail
chroot_dir=$1 root=$2 cuda=$3 call=$4
mount --make-rprivate /
for d in /proc /sys /dev "$root" "$cuda"; do
  mkdir -p "$chroot_dir$d"
  mount --rbind "$d" "$chroot_dir$d"
done
mount -t tmpfs tmpfs "$chroot_dir/tmp"
ln -sfn "$cuda" "$chroot_dir/usr/local/cuda"
exec chroot "$chroot_dir" env -i HOME=/root PATH="/usr/local/cuda/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  CUDA_ARCH="${CUDA_ARCH:-90}" BUILD_DIR="${BUILD_DIR:-build-rehearsal}" BUDGET="${BUDGET:-5400}" \
  LIMIT_SCALE="${LIMIT_SCALE:-15}" \
  bash "$root/scripts/gpu-check.sh" "$call"
INNER
