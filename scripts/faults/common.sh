# Shared by the kinds of scripts/faults.sh (sourced; $train, $work, $trials and $seed are set there).

declare -a table_rows=()
total_lost=0
data_dir=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

# A small deterministic CPU run: Fashion-MNIST's first 128 training images, mnist_cnn, batch 16 (8 steps an
# epoch), 2 epochs, a mid-epoch checkpoint every $2 steps into folder $1. Extra arguments follow.
train_args() {
  local dir=$1 every=$2
  shift 2
  echo --cpu --dataset fashion-mnist --data-dir "$data_dir" --limit-train 128 --limit-test 32 --model mnist_cnn \
    --batch-size 16 --epochs 2 --deterministic --seed 3 --precision fp32 --checkpoint-dir "$dir" \
    --save-every-steps "$every" --resume auto "$@"
}

# Between trials: holds while $work/pause exists (touch it to keep the campaign off the cores for a while,
# e.g. a benchmark on a shared machine; rm it to go on). Never inside a trial: a paused trial's clocks ran on.
hold_while_paused() {
  while [ -e "$work/pause" ]; do sleep 5; done
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# A number drawn from [0, $1): 30 bits mixed from the seed and the draw's number (kept in a file). Not
# $RANDOM: callers take draws in subshells ($(draw N)), and bash 5.2 reseeds RANDOM in every subshell, so
# the same --seed drew other moments (seen 2026-11-27).
draw() {
  local k x
  k=$(( $(cat "$work/draws" 2>/dev/null || echo 0) + 1 ))
  echo "$k" > "$work/draws"
  x=$(( (seed * 1000003 + k * 2654435761) & 0x7fffffffffff ))
  x=$(( ((x ^ (x >> 17)) * 0x5bd1e995) & 0x3fffffffffff ))
  x=$(( x ^ (x >> 13) ))
  echo $(( (x & 0x3fffffff) % $1 ))
}

# The data block (every tensor's bytes) of a safetensors file, on stdout: what "the same weights" compares.
data_block() {
  local n
  n=$(od -An -tu8 -N8 "$1" | tr -d ' ')
  tail -c +$((9 + n)) "$1"
}

same_weights() { cmp -s <(data_block "$1") <(data_block "$2"); }

# The uninterrupted run with a checkpoint every $1 steps (made once): its final checkpoint, and its time in ms
# in ref_ms_<every>.
reference() {
  local every=$1 dir=$work/ref_$1
  if [ ! -f "$dir/epoch2.safetensors" ]; then
    local t0
    t0=$(now_ms)
    # shellcheck disable=SC2046
    "$train" $(train_args "$dir" "$every") > "$work/ref_$every.log" 2>&1 ||
      { cat "$work/ref_$every.log"; echo "faults.sh: the reference run failed" >&2; exit 1; }
    echo $(( $(now_ms) - t0 )) > "$work/ref_ms_$every"
  fi
  echo "$dir/epoch2.safetensors"
}

# record KIND survived|lost DETAIL: one trial's outcome (a loss prints its detail and log at once).
declare -A trials_of=() survived_of=() lost_of=() notes_of=()
record() {
  local kind=$1 outcome=$2 detail=$3
  trials_of[$kind]=$(( ${trials_of[$kind]:-0} + 1 ))
  if [ "$outcome" = survived ]; then
    survived_of[$kind]=$(( ${survived_of[$kind]:-0} + 1 ))
  else
    lost_of[$kind]=$(( ${lost_of[$kind]:-0} + 1 ))
    total_lost=$((total_lost + 1))
    echo "  LOST ($kind): $detail"
  fi
  [[ " ${table_rows[*]} " == *" $kind "* ]] || table_rows+=("$kind")
}

# note KIND TEXT: a remark printed under the table (how many kills landed inside a write, skips, ...).
note() { notes_of[$1]="${notes_of[$1]:-}$2 "; }

print_table() {
  echo
  echo "== faults: seed $seed, $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null)"
  printf '| %-18s | %9s | %9s | %5s | %s |\n' fault trials survived lost notes
  printf '|%s|%s|%s|%s|%s|\n' -------------------- ----------: ----------: ------: -------
  for kind in "${table_rows[@]}"; do
    printf '| %-18s | %9s | %9s | %5s | %s |\n' "$kind" "${trials_of[$kind]}" "${survived_of[$kind]:-0}" \
      "${lost_of[$kind]:-0}" "${notes_of[$kind]:-}"
  done
}

# Waits for pid $1 up to $2 seconds; 0 when it ended in time.
wait_ended() {
  local pid=$1 deadline=$(( $(now_ms) + $2 * 1000 ))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# "exit N" of a finished background job, 128 + signal when killed.
exit_of() {
  wait "$1"
  echo $?
}
