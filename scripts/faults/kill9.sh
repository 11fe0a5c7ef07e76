# kill -9 during training (a checkpoint every $2 steps; kind kill9-save saves after every step, so the moment
# often falls inside a write): --resume auto must finish with the uninterrupted run's weights, bit for bit.

kill9_trials() {
  local kind=$1 every=$2 ref ref_ms inside=0
  ref=$(reference "$every")
  ref_ms=$(cat "$work/ref_ms_$every")
  echo "== $kind: $trials trials, kill -9 at a moment drawn from [0, $ref_ms ms) (the uninterrupted run)"
  for ((t = 0; t < trials; t++)); do
    hold_while_paused
    local dir=$work/$kind/$t moment pid
    mkdir -p "$dir"
    moment=$(draw "$ref_ms")
    # shellcheck disable=SC2046
    "$train" $(train_args "$dir/ckpt" "$every") > "$dir/killed.log" 2>&1 &
    pid=$!
    sleep "$(printf '%d.%03d' $((moment / 1000)) $((moment % 1000)))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if compgen -G "$dir/ckpt/*.tmp-*" > /dev/null; then inside=$((inside + 1)); fi
    # shellcheck disable=SC2046
    "$train" $(train_args "$dir/ckpt" "$every") > "$dir/resumed.log" 2>&1
    local rc=$? taken
    taken=$(grep -o 'resumed from [^:]*' "$dir/resumed.log" | head -1)
    if [ $rc -ne 0 ]; then
      record "$kind" lost "trial $t (kill at $moment ms): the resumed run exited $rc (log $dir/resumed.log)"
      tail -5 "$dir/resumed.log"
    elif [[ "$taken" == *.tmp-* ]]; then
      record "$kind" lost "trial $t (kill at $moment ms): took a partial file: $taken"
    elif ! same_weights "$ref" "$dir/ckpt/epoch2.safetensors"; then
      record "$kind" lost "trial $t (kill at $moment ms): final weights differ from the uninterrupted run ($taken)"
    else
      record "$kind" survived ""
    fi
  done
  note "$kind" "kills inside a write: $inside;"
}
