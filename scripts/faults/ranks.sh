# Ranks: one of 2 CPU ranks (cnn_train --cpu --nproc 2 --timeout 10) killed, stopped (SIGSTOP) or its data
# file removed at a moment drawn over the run. Every rank must end within the timeout plus a margin, the
# failing rank must be named (or the run finish: removing a file the ranks have read changes nothing), and
# every checkpoint left must load (cnn_train --eval-only).

rank_trials() {
  local kind timeout=10 margin=30 ref_ms copy=$work/rank_data
  mkdir -p "$copy"
  cp "$data_dir"/* "$copy"/
  local t0
  t0=$(now_ms)
  # shellcheck disable=SC2046
  "$train" $(data_dir=$copy train_args "$work/rank_ref" 2) --nproc 2 --timeout $timeout > "$work/rank_ref.log" 2>&1 ||
    { cat "$work/rank_ref.log"; echo "faults.sh: the 2-rank reference run failed" >&2; exit 1; }
  ref_ms=$(( $(now_ms) - t0 ))
  echo "== ranks: $trials trials of each of kill, stop, rm-data on one of 2 ranks at a moment in [0, $ref_ms ms)"
  for action in kill stop rm-data; do
    kind=rank-$action
    local injected=0
    for ((t = 0; t < trials; t++)); do
      hold_while_paused
      local dir=$work/$kind/$t moment pid victim="" rank=-1 rc ended=1
      mkdir -p "$dir/data"
      cp "$copy"/* "$dir/data"/
      moment=$(draw "$ref_ms")
      # shellcheck disable=SC2046
      "$train" $(data_dir=$dir/data train_args "$dir/ckpt" 2) --nproc 2 --timeout $timeout > "$dir/run.log" 2>&1 &
      pid=$!
      sleep "$(printf '%d.%03d' $((moment / 1000)) $((moment % 1000)))"
      local ranks
      read -r -a ranks < <(cat "/proc/$pid/task/$pid/children" 2>/dev/null)
      if [ ${#ranks[@]} -eq 2 ]; then
        rank=$(draw 2)
        victim=${ranks[$rank]}
        injected=$((injected + 1))
        case $action in
          kill) kill -9 "$victim" ;;
          stop) kill -STOP "$victim" ;;
          rm-data) rm -f "$dir/data/train-images-idx3-ubyte.gz" ;;
        esac
      fi
      wait_ended "$pid" $((timeout + margin)) || ended=0
      local verdict=survived detail=""
      if [ $ended = 0 ]; then
        verdict=lost detail="the launcher still runs $((timeout + margin)) s later"
        kill -9 "$pid" 2>/dev/null
      fi
      wait "$pid" 2>/dev/null
      rc=$?
      for p in "${ranks[@]}"; do
        if [ -n "$p" ] && [ -d "/proc/$p" ] && ! grep -q "^State:.*Z" "/proc/$p/status" 2>/dev/null &&
           grep -q -- "--nproc" "/proc/$p/cmdline" 2>/dev/null; then
          verdict=lost detail="$detail; rank process $p still exists after the launcher ended"
          kill -CONT "$p" 2>/dev/null
          kill -9 "$p" 2>/dev/null
        fi
      done
      if [ $verdict = survived ] && [ $rc -ne 0 ] && [ -n "$victim" ] && [ "$action" != rm-data ] &&
         ! grep -q "rank $rank" "$dir/run.log"; then
        verdict=lost detail="exit $rc without naming rank $rank"
      fi
      if [ $verdict = survived ] && [ $rc -ge 128 ] && [ $rc -ne 137 ]; then
        verdict=lost detail="the launcher ended by signal $((rc - 128))"
      fi
      for f in "$dir"/ckpt/*.safetensors; do
        [ -e "$f" ] || continue
        if ! "$train" --cpu --dataset fashion-mnist --data-dir "$copy" --limit-test 64 --eval-only "$f" \
             > "$dir/eval.log" 2>&1; then
          verdict=lost detail="$detail; $f does not load: $(tail -1 "$dir/eval.log")"
        fi
      done
      [ $verdict = lost ] && tail -8 "$dir/run.log"
      record "$kind" $verdict "trial $t ($action rank $rank at $moment ms, exit $rc): $detail (log $dir/run.log)"
    done
    note "$kind" "while both ranks ran: $injected (the others fell before the ranks started or after they ended);"
  done
}
