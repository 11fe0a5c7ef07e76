# I/O errors (EIO) other than a full disk: one file call fails, through an LD_PRELOAD library
# (tests/common/io_error_shim.cpp, built here), at the Nth call drawn over an uninterrupted run's count.
#   io-error-save  an open, write, fsync, rename or close in the checkpoint folder (the folder's own flush and
#                  its lock file included): exit 1..127 with "Input/output error" naming a file in the folder,
#                  never a signal, never exit 0 when a save's call failed; then --resume auto skips nothing
#                  and finishes with the uninterrupted weights
#   io-error-read  a read of the data set's files (exit 1..127, the file and the error named), or of the
#                  newest checkpoint at --resume auto (in the search: skipped, saying why, and the run
#                  finishes with the same weights; at the load: exit 1..127 naming the file, then resumes)

shim=""
build_shim() {
  [ -n "$shim" ] && return
  shim=$work/io_error_shim.so
  c++ -std=c++20 -O2 -shared -fPIC -o "$shim" tests/common/io_error_shim.cpp -ldl ||
    { echo "faults.sh: cannot build the I/O error library" >&2; exit 1; }
}

# with_fault PATH_PART OP NTH COUNTS_FILE cnn_train-args...: cnn_train with the shim loaded.
with_fault() {
  local part=$1 op=$2 nth=$3 counts=$4
  shift 4
  LD_PRELOAD=$shim ENGINE_IO_FAULT_PATH=$part ENGINE_IO_FAULT_OP=$op ENGINE_IO_FAULT_NTH=$nth \
    ENGINE_IO_FAULT_COUNTS=$counts "$train" "$@"
}

count_of() { awk -v op="$1" '$1 == op {print $2}' "$2"; }

io_error_save_trials() {
  local kind=io-error-save every=4 ref counts=$work/io_save_counts hit_lock=0 partial=0
  build_shim
  ref=$(reference "$every")
  # shellcheck disable=SC2046
  with_fault "$work/io_count/ckpt" none 0 "$counts" $(train_args "$work/io_count/ckpt" "$every") \
    > "$work/io_count.log" 2>&1 || { cat "$work/io_count.log"; echo "faults.sh: the counted run failed" >&2; exit 1; }
  local ops=(open write fsync rename close)
  echo "== $kind: $trials trials, EIO at call N of a kind drawn from $(for o in "${ops[@]}"; do printf '%s:%s ' "$o" "$(count_of "$o" "$counts")"; done)"
  for ((t = 0; t < trials; t++)); do
    hold_while_paused
    local dir=$work/$kind/$t op nth rc failed
    mkdir -p "$dir"
    op=${ops[$(draw ${#ops[@]})]}
    nth=$(( 1 + $(draw "$(count_of "$op" "$counts")") ))
    # shellcheck disable=SC2046
    with_fault "$dir/ckpt" "$op" "$nth" /dev/null $(train_args "$dir/ckpt" "$every") > "$dir/fault.log" 2>&1
    rc=$?
    failed=$(sed -n "s/^io_error_shim: $op('\([^']*\)').*/\1/p" "$dir/fault.log" | head -1)
    local verdict=survived detail="$op call $nth on ${failed:-nothing}"
    if [ $rc -ge 128 ]; then
      verdict=lost detail="$detail: ended by signal $((rc - 128))"
    elif [ "$op" = close ] && { [[ "$failed" == */cnn_train.lock ]] || [ "$failed" = "$dir/ckpt" ]; }; then
      hit_lock=$((hit_lock + 1))  # the close of the lock or of the folder (read-only): nothing depends on it
    elif [ -z "$failed" ]; then
      verdict=lost detail="$detail: the fault was not met (the counts changed?)"
    elif [ $rc -eq 0 ]; then
      verdict=lost detail="$detail: exit 0, the failed call unreported"
    elif ! grep "^cnn_train: " "$dir/fault.log" | grep "Input/output error" | grep -q "$dir/ckpt"; then
      verdict=lost detail="$detail: exit $rc without 'Input/output error' and the file: $(tail -1 "$dir/fault.log")"
    fi
    if compgen -G "$dir/ckpt/*.tmp-*" > /dev/null; then partial=$((partial + 1)); fi
    if [ $verdict = survived ]; then
      # shellcheck disable=SC2046
      "$train" $(train_args "$dir/ckpt" "$every") > "$dir/resumed.log" 2>&1
      rc=$?
      if [ $rc -ne 0 ]; then
        verdict=lost detail="$detail: the resumed run exited $rc"
      elif grep -q "skipping" "$dir/resumed.log"; then
        verdict=lost detail="$detail: a damaged checkpoint was left: $(grep -m1 skipping "$dir/resumed.log")"
      elif ! same_weights "$ref" "$dir/ckpt/epoch2.safetensors"; then
        verdict=lost detail="$detail: final weights differ from the uninterrupted run"
      fi
    fi
    [ $verdict = lost ] && tail -5 "$dir/fault.log" "$dir/resumed.log" 2>/dev/null
    record "$kind" $verdict "trial $t ($detail) (logs in $dir)"
  done
  note "$kind" "closes of the lock or the folder (read-only, no effect): $hit_lock; partial files left: $partial;"
}

io_error_read_trials() {
  local kind=io-error-read every=4 ref data_counts=$work/io_data_counts ckpt_counts=$work/io_ckpt_counts
  local data_hits=0 ckpt_hits=0 stopped=0
  build_shim
  ref=$(reference "$every")
  # shellcheck disable=SC2046
  with_fault "$data_dir" none 0 "$data_counts" $(train_args "$work/io_read_count/ckpt" "$every") \
    > "$work/io_read_count.log" 2>&1 || { cat "$work/io_read_count.log"; echo "faults.sh: the counted run failed" >&2; exit 1; }
  mkdir -p "$work/io_resume_count/ckpt"
  cp "$(dirname "$ref")/epoch1.safetensors" "$work/io_resume_count/ckpt/"
  # shellcheck disable=SC2046
  with_fault "epoch1.safetensors" none 0 "$ckpt_counts" $(train_args "$work/io_resume_count/ckpt" "$every") \
    > "$work/io_resume_count.log" 2>&1 || { cat "$work/io_resume_count.log"; echo "faults.sh: the counted resume failed" >&2; exit 1; }
  echo "== $kind: $trials trials, EIO at a read drawn from the data set's $(count_of read "$data_counts") or the checkpoint's $(count_of read "$ckpt_counts") at --resume auto"
  for ((t = 0; t < trials; t++)); do
    hold_while_paused
    local dir=$work/$kind/$t nth rc verdict=survived detail
    mkdir -p "$dir/ckpt"
    if [ "$(draw 2)" = 0 ]; then
      nth=$(( 1 + $(draw "$(count_of read "$data_counts")") ))
      detail="data read $nth"
      # shellcheck disable=SC2046
      with_fault "$data_dir" read "$nth" /dev/null $(train_args "$dir/ckpt" "$every") > "$dir/fault.log" 2>&1
      rc=$?
      data_hits=$((data_hits + 1))
      if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then
        verdict=lost detail="$detail: exit $rc"
      elif ! grep "^cnn_train: " "$dir/fault.log" | grep "Input/output error" | grep -q "$data_dir/"; then
        verdict=lost detail="$detail: exit $rc without 'Input/output error' and the file: $(tail -1 "$dir/fault.log")"
      fi
    else
      nth=$(( 1 + $(draw "$(count_of read "$ckpt_counts")") ))
      detail="checkpoint read $nth at --resume auto"
      cp "$(dirname "$ref")/epoch1.safetensors" "$dir/ckpt/"
      # shellcheck disable=SC2046
      with_fault "epoch1.safetensors" read "$nth" /dev/null $(train_args "$dir/ckpt" "$every") > "$dir/fault.log" 2>&1
      rc=$?
      ckpt_hits=$((ckpt_hits + 1))
      # A read failing in --resume auto's search skips the file (saying why); one failing at the load of the
      # file it chose stops the run (exit 1..127, the file and the error named): run again, it resumes.
      if [ $rc -ge 128 ]; then
        verdict=lost detail="$detail: ended by signal $((rc - 128))"
      elif [ $rc -eq 0 ] && ! grep -q "skipping $dir/ckpt/epoch1.safetensors: cannot read checkpoint .*Input/output error" "$dir/fault.log"; then
        verdict=lost detail="$detail: the failed read was not named"
      elif [ $rc -ne 0 ] && ! grep -q "cannot read checkpoint '$dir/ckpt/epoch1.safetensors' after [0-9]* bytes: Input/output error" "$dir/fault.log"; then
        verdict=lost detail="$detail: exit $rc without the file and the error named: $(tail -1 "$dir/fault.log")"
      elif [ $rc -ne 0 ]; then
        stopped=$((stopped + 1))
        # shellcheck disable=SC2046
        "$train" $(train_args "$dir/ckpt" "$every") > "$dir/resumed.log" 2>&1 ||
          { verdict=lost detail="$detail: the run again exited $?"; }
      fi
      if [ $verdict = survived ] && ! same_weights "$ref" "$dir/ckpt/epoch2.safetensors"; then
        verdict=lost detail="$detail: final weights differ from the uninterrupted run"
      fi
    fi
    [ $verdict = lost ] && tail -5 "$dir/fault.log"
    record "$kind" $verdict "trial $t ($detail) (log $dir/fault.log)"
  done
  note "$kind" "at the data read: $data_hits, at the checkpoint read: $ckpt_hits (of which stopped at the load, then resumed: $stopped);"
}
