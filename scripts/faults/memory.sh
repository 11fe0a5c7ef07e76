# Memory: the run under ulimit -v at a cap drawn uniformly over [85%, 102%] of the uncapped run's peak
# virtual size, so the cap falls at load (the whole training file is read and decoded), while the model and
# oneDNN's buffers are made, or not at all. Survived: exit 0, or an exit of 1..127 whose message says
# "host out of memory" (with the bytes asked where the engine allocates; oneDNN's internal allocations do
# not tell their size: counted apart). A refusal by the dynamic loader (the CUDA libraries' mappings, before
# the program starts) is counted apart: a clear line, but not the program's.

memory_trials() {
  local kind=memory peak=0 pid loader=0 oom=0 unsized=0
  # shellcheck disable=SC2046
  "$train" $(train_args "$work/mem_ref" 2) > "$work/mem_ref.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    local vm
    vm=$(awk '/^VmPeak/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$vm" ] && [ "$vm" -gt "$peak" ] && peak=$vm
    sleep 0.05
  done
  wait "$pid" || { cat "$work/mem_ref.log"; echo "faults.sh: the uncapped run failed" >&2; exit 1; }
  echo "== memory: $trials trials, ulimit -v drawn from [85%, 102%] of the peak $((peak / 1024)) MiB"
  for ((t = 0; t < trials; t++)); do
    hold_while_paused
    local dir=$work/$kind/$t cap rc
    mkdir -p "$dir"
    cap=$(( peak * 85 / 100 + $(draw $(( peak * 17 / 100 ))) ))
    # shellcheck disable=SC2046
    (ulimit -v "$cap" && exec "$train" $(train_args "$dir/ckpt" 2)) > "$dir/run.log" 2>&1
    rc=$?
    local verdict=survived detail=""
    if [ $rc -eq 127 ] && grep -q "error while loading shared libraries" "$dir/run.log"; then
      loader=$((loader + 1))
    elif [ $rc -ne 0 ]; then
      if [ $rc -ge 128 ]; then
        verdict=lost detail="ended by signal $((rc - 128))"
      elif grep -qE "host out of memory: asked for [0-9]+ bytes" "$dir/run.log"; then
        oom=$((oom + 1))
      elif grep -q "host out of memory" "$dir/run.log"; then
        unsized=$((unsized + 1))
      else
        verdict=lost detail="exit $rc without 'host out of memory': $(tail -1 "$dir/run.log")"
      fi
    fi
    record "$kind" $verdict "trial $t (cap $((cap / 1024)) MiB): $detail (log $dir/run.log)"
  done
  note "$kind" "out of memory with the bytes asked: $oom, inside oneDNN (size not told): $unsized, refused by the dynamic loader: $loader, finished: $(( trials - oom - unsized - loader - ${lost_of[$kind]:-0} ));"
}
