# Disk full at a save: the checkpoint folder is a 64 MiB tmpfs, filled by another file at a random moment.
# The run must end with a clear error naming the file (no signal, exit 1..127) or finish if no save came
# after; then, with room again, --resume auto must finish with the uninterrupted run's weights.

disk_full_trials() {
  local kind=disk-full every=4 ref ref_ms mnt=$work/tmpfs hit=0
  mkdir -p "$mnt"
  if ! mount -t tmpfs -o size=64m tmpfs "$mnt" 2> "$work/mount.log"; then
    echo "== $kind: skipped: cannot mount a tmpfs here ($(cat "$work/mount.log")); run as root"
    note "$kind" "skipped: no mount;"
    trials_of[$kind]=0
    table_rows+=("$kind")
    return
  fi
  umount "$mnt"
  ref=$(reference "$every")
  ref_ms=$(cat "$work/ref_ms_$every")
  echo "== $kind: $trials trials, a 64 MiB tmpfs filled at a moment drawn from [0, $ref_ms ms)"
  for ((t = 0; t < trials; t++)); do
    hold_while_paused
    local dir=$work/$kind/$t moment pid rc
    mkdir -p "$dir"
    mount -t tmpfs -o size=64m tmpfs "$mnt"
    moment=$(draw "$ref_ms")
    # shellcheck disable=SC2046
    "$train" $(train_args "$mnt/ckpt" "$every") > "$dir/full.log" 2>&1 &
    pid=$!
    sleep "$(printf '%d.%03d' $((moment / 1000)) $((moment % 1000)))"
    dd if=/dev/zero of="$mnt/filler" bs=1M > /dev/null 2>&1  # until ENOSPC
    wait "$pid"
    rc=$?
    rm -f "$mnt/filler"
    local verdict=survived detail=""
    if [ $rc -ne 0 ]; then
      hit=$((hit + 1))
      if [ $rc -ge 128 ]; then
        verdict=lost detail="ended by signal $((rc - 128))"
      elif ! grep -q "No space left on device" "$dir/full.log" || ! grep -q "$mnt/ckpt/" "$dir/full.log"; then
        verdict=lost detail="exit $rc without 'No space left on device' and the file's name"
      fi
    fi
    if [ $verdict = survived ]; then
      # shellcheck disable=SC2046
      "$train" $(train_args "$mnt/ckpt" "$every") > "$dir/resumed.log" 2>&1
      rc=$?
      if [ $rc -ne 0 ]; then
        verdict=lost detail="the resumed run exited $rc"
      elif ! same_weights "$ref" "$mnt/ckpt/epoch2.safetensors"; then
        verdict=lost detail="final weights differ from the uninterrupted run"
      fi
    fi
    [ $verdict = lost ] && tail -5 "$dir/full.log" "$dir/resumed.log" 2>/dev/null
    record "$kind" $verdict "trial $t (full at $moment ms): $detail (logs in $dir)"
    umount "$mnt"
  done
  note "$kind" "runs that met a full disk: $hit;"
}
