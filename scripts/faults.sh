#!/usr/bin/env bash
# The fault campaign (issue 33): faults injected into cnn_train at random moments drawn from a seed it prints,
# and after each trial a check that nothing was lost. A table ends it: fault, trials, survived, lost.
#
#   scripts/faults.sh                 the full campaign (by hand: ~1 h on 2 cores; the figures go in docs)
#   scripts/faults.sh --smoke         one trial of each kind, no fuzzing (scripts/test.sh; 2-4 minutes)
#   scripts/faults.sh --seed 42       repeat a campaign (the moments, bytes and caps follow from the seed)
#   TRIALS=5 FUZZ_RUNS=100000 scripts/faults.sh    other sizes; ONLY="kill9 corrupt" some kinds only
#   touch WORK/pause                  holds the campaign between trials (WORK: the folder it prints) until the
#                                     file is removed, e.g. while a benchmark needs the machine quiet
#
# The kinds (the checks are in scripts/faults/*.sh, one file each):
#   kill9       kill -9 at a moment drawn uniformly over the run; --resume auto finishes with the weights of
#               the uninterrupted --deterministic run, bit for bit, and never takes a partial file
#   kill9-save  the same with a save after every step, so the kill often lands inside a write (counted)
#   disk-full   the checkpoint folder (a 64 MiB tmpfs) filled at a random moment: a clear error naming the
#               file, no signal; then, with room again, --resume auto finishes with the uninterrupted weights
#   io-error    one file call fails with EIO (an LD_PRELOAD library): a write, fsync, rename or close of a
#               save (io-error-save), a read of the data or of the checkpoint at --resume auto (io-error-read):
#               a clear error naming the file, no signal, the previous checkpoint intact, then resumable
#   corrupt     the newest checkpoint with a flipped byte or truncated at a random offset: --resume FILE
#               refuses it by name, --resume auto skips it (saying so) and finishes with the same weights
#   ranks       one of 2 CPU ranks killed, stopped (SIGSTOP) or its data file removed at a random moment:
#               every rank ends within --timeout plus a margin, the rank is named, every checkpoint loads
#   torchrun    torchrun --max-restarts=1 over 2 ranks, one killed at a random moment (torchrun-restart): the
#               job restarts from the newest checkpoint and ends with the uninterrupted weights (skipped
#               without torchrun; $ENGINE_TORCHRUN names one)
#   memory      ulimit -v at a random cap (at load or during training): exit 0, or a clear out-of-memory
#               message with the size asked; never a signal
#   memory-cgroup  2 ranks in a child memory cgroup limited at a random size (root): exit 0, or the
#               launcher naming the rank the kernel's OOM killer ended; never a hang
#   fuzz-*      each reader under libFuzzer for FUZZ_RUNS executions (scripts/fuzz.sh); a crash is a loss
set -uo pipefail
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}  # one thread a run: many short runs, and no spinning OpenMP threads on a busy machine
cd "$(dirname "$0")/.."

smoke=0
seed=${SEED:-$(( $(date +%s) % 1000000 ))}
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --seed) seed=$2; shift ;;
    *) echo "faults.sh: unknown argument '$1' (--smoke, --seed N)" >&2; exit 2 ;;
  esac
  shift
done
if [ $smoke = 1 ]; then trials=${TRIALS:-1}; fuzz_runs=${FUZZ_RUNS:-0}; else trials=${TRIALS:-20}; fuzz_runs=${FUZZ_RUNS:-1000000}; fi
only=${ONLY:-kill9 kill9-save disk-full io-error corrupt ranks torchrun memory memory-cgroup fuzz}
build=${BUILD_DIR:-build}
train=$PWD/$build/apps/cnn_train
[ -x "$train" ] || { echo "faults.sh: $train is missing: build it first (scripts/build.sh)" >&2; exit 2; }
work=$(mktemp -d /tmp/cnn_engine_faults.XXXXXX)
# The trials' folders and logs stay when something was lost (or KEEP=1), for the report.
trap 'umount "$work"/tmpfs 2>/dev/null; if [ "${total_lost:-0}" = 0 ] && [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "faults.sh: logs kept in $work"; fi' EXIT
echo "== faults: seed $seed (repeat with --seed $seed), $trials trials per kind, work in $work"
RANDOM=$seed

# shellcheck source=scripts/faults/common.sh
source scripts/faults/common.sh
source scripts/python-env.sh  # ENGINE_TORCHRUN: PyTorch's venv, for torchrun-restart
for kind in $only; do
  case $kind in
    kill9) source scripts/faults/kill9.sh; kill9_trials kill9 4 ;;
    kill9-save) source scripts/faults/kill9.sh; kill9_trials kill9-save 1 ;;
    disk-full) source scripts/faults/disk_full.sh; disk_full_trials ;;
    io-error) source scripts/faults/io_error.sh; io_error_save_trials; io_error_read_trials ;;
    corrupt) source scripts/faults/corrupt.sh; corrupt_trials ;;
    ranks) source scripts/faults/ranks.sh; rank_trials ;;
    torchrun) source scripts/faults/torchrun.sh; torchrun_trials ;;
    memory) source scripts/faults/memory.sh; memory_trials ;;
    memory-cgroup) source scripts/faults/memory_cgroup.sh; memory_cgroup_trials ;;
    fuzz) if [ "$fuzz_runs" -gt 0 ]; then source scripts/faults/fuzz.sh; fuzz_trials; fi ;;
    *) echo "faults.sh: unknown kind '$kind'" >&2; exit 2 ;;
  esac
done
print_table
[ "$total_lost" -eq 0 ]
