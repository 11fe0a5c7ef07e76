# torchrun --max-restarts=1 over 2 CPU ranks (--no-python cnn_train, a checkpoint every 2 steps, --resume
# auto): one rank, drawn at random, killed (kill -9) at a moment drawn over the ranks' lives in an
# uninterrupted run (from both running to both gone: torchrun's own start and end take far longer). torchrun stops the other
# and starts both again; the job must end 0 with the final weights of our launcher's uninterrupted 2-rank run,
# bit for bit (--deterministic; the two launchers' runs are the same: tests/cpu/cnn_train_launchers_test.cpp).
# Needs PyTorch's torchrun: $ENGINE_TORCHRUN (scripts/python-env.sh sets it where scripts/install-python-deps.sh
# made PyTorch's venv) or torchrun on PATH; else skipped.

# The pid of torchrun $1's worker with RANK=$2, or nothing.
rank_pid() {
  local child
  for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    if tr '\0' '\n' 2>/dev/null < "/proc/$child/environ" | grep -qx "RANK=$2"; then echo "$child"; return; fi
  done
}

# Waits (up to 120 s) until torchrun $1 runs both ranks.
wait_for_ranks() {
  local deadline=$(( $(now_ms) + 120000 ))
  while [ "$(now_ms)" -lt "$deadline" ] && kill -0 "$1" 2>/dev/null; do
    [ -n "$(rank_pid "$1" 0)" ] && [ -n "$(rank_pid "$1" 1)" ] && return
    sleep 0.05
  done
}

torchrun_trials() {
  local kind=torchrun-restart torchrun="${ENGINE_TORCHRUN:-}" copy=$work/rank_data ref ref_ms restarted=0 before=0
  [ -z "$torchrun" ] && torchrun=$(command -v torchrun)
  if [ -z "$torchrun" ] || ! "$torchrun" --help > /dev/null 2>&1; then
    echo "== $kind: skipped: no torchrun (set ENGINE_TORCHRUN=/path/to/venv/bin/torchrun)"
    note "$kind" "skipped: no torchrun;"
    trials_of[$kind]=0
    table_rows+=("$kind")
    return
  fi
  mkdir -p "$copy"
  cp -n "$data_dir"/* "$copy"/
  # shellcheck disable=SC2046
  "$train" $(data_dir=$copy train_args "$work/tr_ref" 2) --nproc 2 > "$work/tr_ref.log" 2>&1 ||
    { cat "$work/tr_ref.log"; echo "faults.sh: the 2-rank reference run failed" >&2; exit 1; }
  ref=$work/tr_ref/epoch2.safetensors
  local t0 pid
  # shellcheck disable=SC2046
  "$torchrun" --nproc_per_node=2 --max-restarts=1 --master_port=$((20000 + $(draw 20000))) --no-python "$train" \
    $(data_dir=$copy train_args "$work/tr_ref_torchrun" 2) > "$work/tr_ref_torchrun.log" 2>&1 &
  pid=$!
  wait_for_ranks "$pid"
  t0=$(now_ms)
  while [ -n "$(rank_pid "$pid" 0)" ] || [ -n "$(rank_pid "$pid" 1)" ]; do sleep 0.05; done
  ref_ms=$(( $(now_ms) - t0 ))  # the ranks' lives (torchrun's own start and end take far longer)
  wait "$pid" || { cat "$work/tr_ref_torchrun.log"; echo "faults.sh: the torchrun run failed" >&2; exit 1; }
  if ! same_weights "$ref" "$work/tr_ref_torchrun/epoch2.safetensors"; then
    echo "faults.sh: torchrun's uninterrupted run differs from our launcher's" >&2
    exit 1
  fi
  echo "== $kind: $trials trials, kill -9 of one of 2 ranks under $torchrun at a moment in [0, $ref_ms ms) after both run"
  for ((t = 0; t < trials; t++)); do
    hold_while_paused
    local dir=$work/$kind/$t moment pid rank victim="" rc verdict=survived detail=""
    mkdir -p "$dir"
    moment=$(draw "$ref_ms")
    rank=$(draw 2)
    # shellcheck disable=SC2046
    "$torchrun" --nproc_per_node=2 --max-restarts=1 --master_port=$((20000 + $(draw 20000))) --no-python "$train" \
      $(data_dir=$copy train_args "$dir/ckpt" 2) > "$dir/run.log" 2>&1 &
    pid=$!
    wait_for_ranks "$pid"
    sleep "$(printf '%d.%03d' $((moment / 1000)) $((moment % 1000)))"
    victim=$(rank_pid "$pid" "$rank")
    if [ -n "$victim" ]; then
      kill -9 "$victim"
      restarted=$((restarted + 1))
    else
      before=$((before + 1))
    fi
    wait_ended "$pid" 300 || { verdict=lost detail="torchrun still runs 300 s later"; kill -9 "$pid"; }
    wait "$pid" 2>/dev/null
    rc=$?
    if [ $verdict = survived ] && [ $rc -ne 0 ]; then
      verdict=lost detail="torchrun exited $rc"
    elif [ $verdict = survived ] && ! same_weights "$ref" "$dir/ckpt/epoch2.safetensors"; then
      verdict=lost detail="final weights differ from the uninterrupted run"
    fi
    [ $verdict = lost ] && tail -8 "$dir/run.log"
    record "$kind" $verdict "trial $t (rank $rank at $moment ms${victim:+, pid $victim}): $detail (log $dir/run.log)"
  done
  note "$kind" "a rank killed while running: $restarted (the others before the ranks started or after they ended: $before);"
}
