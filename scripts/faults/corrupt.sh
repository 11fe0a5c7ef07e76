# A corrupt newest checkpoint: a run stopped (kill -9) after its mid-epoch checkpoint of step 12 leaves
# epoch1, last and step12; step12, the newest, gets one byte flipped or is truncated at an offset drawn over
# the file. --resume FILE must refuse it by name (or, were the change harmless, finish with the uninterrupted
# weights); --resume auto must skip it, saying so, and finish from epoch 1 with the uninterrupted weights.

corrupt_trials() {
  local kind ref base=$work/corrupt_base pid
  ref=$(reference 2)
  # shellcheck disable=SC2046
  "$train" $(train_args "$base" 2) > "$work/corrupt_base.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && ! grep -q "saved $base/step12.safetensors" "$work/corrupt_base.log" 2>/dev/null; do
    sleep 0.02
  done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rm -f "$base"/*.tmp-*
  [ -f "$base/step12.safetensors" ] || { cat "$work/corrupt_base.log"; echo "faults.sh: no step12 checkpoint" >&2; exit 1; }
  local size
  size=$(stat -c %s "$base/step12.safetensors")
  echo "== corrupt: $trials trials each of a flipped byte and a truncation of a $size-byte checkpoint"
  for how in flip truncate; do
    kind=corrupt-$how
    for ((t = 0; t < trials; t++)); do
      hold_while_paused
      local dir=$work/$kind/$t at target rc verdict=survived detail=""
      mkdir -p "$dir"
      cp -r "$base" "$dir/ckpt"
      target=$dir/ckpt/step12.safetensors
      at=$(draw "$size")
      if [ $how = flip ]; then
        local old new
        old=$(od -An -tu1 -j "$at" -N1 "$target" | tr -d ' ')
        new=$(( old ^ (1 + $(draw 255)) ))
        printf "$(printf '\\%03o' "$new")" | dd of="$target" bs=1 seek="$at" conv=notrunc status=none
      else
        truncate -s "$at" "$target"
      fi
      # --resume FILE into another folder, so that a harmless change that loads does not touch this one.
      # shellcheck disable=SC2046
      "$train" $(train_args "$dir/by_name" 2 | sed 's/--resume auto//') --resume "$target" > "$dir/by_name.log" 2>&1
      rc=$?
      if [ $rc -eq 0 ]; then
        same_weights "$ref" "$dir/by_name/epoch2.safetensors" ||
          { verdict=lost detail="--resume FILE loaded the changed file and ended elsewhere"; }
        local harmless=1
      elif [ $rc -ge 128 ] || ! grep -q "$target" "$dir/by_name.log"; then
        verdict=lost detail="--resume FILE: exit $rc without naming the file: $(tail -1 "$dir/by_name.log")"
      fi
      # shellcheck disable=SC2046
      "$train" $(train_args "$dir/ckpt" 2) > "$dir/auto.log" 2>&1
      rc=$?
      if [ $rc -ne 0 ]; then
        verdict=lost detail="$detail; --resume auto exited $rc"
      elif ! same_weights "$ref" "$dir/ckpt/epoch2.safetensors"; then
        verdict=lost detail="$detail; --resume auto ended with other weights"
      elif [ -z "${harmless:-}" ] && ! grep -q "skipping $target" "$dir/auto.log"; then
        verdict=lost detail="$detail; --resume auto did not say it skipped $target"
      fi
      unset harmless
      [ $verdict = lost ] && tail -4 "$dir/by_name.log" "$dir/auto.log"
      record "$kind" $verdict "trial $t ($how at $at): $detail (logs in $dir)"
    done
  done
}
