# Memory capped by a cgroup (resident memory, not address space as memory.sh's ulimit -v): a 2-rank CPU run
# (launcher and ranks in one child memory cgroup, as a Slurm job or a container) under a limit drawn over
# [40%, 100%] of the uncapped run's peak, so the cap falls at load (both ranks read and decode the training
# file) or during training. The kernel does not fail an allocation there: it kills the largest process (a
# rank). Survived: exit 0, or the launcher naming the killed rank and "the kernel's out-of-memory killer",
# every process gone within the timeout plus a margin (never a hang), every checkpoint left loadable.
# Needs root and a memory controller that allows a child group (cgroup v1's memory hierarchy, or v2 with
# +memory in the parent's cgroup.subtree_control); else skipped, saying which.

# Sets cg_parent and cg_v (1 or 2), or prints why not and returns 1.
find_memory_cgroup() {
  local line path
  line=$(grep -E '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup)
  if [ -n "$line" ] && [ -d /sys/fs/cgroup/memory ]; then
    path=${line##*:}
    cg_parent=/sys/fs/cgroup/memory$path cg_v=1
  else
    path=$(sed -n 's/^0:://p' /proc/self/cgroup)
    cg_parent=/sys/fs/cgroup$path cg_v=2
    if ! grep -qw memory "$cg_parent/cgroup.subtree_control" 2>/dev/null; then
      echo "no memory controller for a child group: $cg_parent/cgroup.subtree_control lacks 'memory'" \
           "($(cat "$cg_parent/cgroup.controllers" 2>/dev/null || echo 'no cgroup.controllers'))"
      return 1
    fi
  fi
  if ! mkdir "$cg_parent/faults_probe_$$" 2> "$work/cgroup.log"; then
    echo "cannot create a child of $cg_parent: $(cat "$work/cgroup.log") (root and a writable cgroupfs needed)"
    return 1
  fi
  rmdir "$cg_parent/faults_probe_$$"
}

# in_cgroup GROUP LIMIT cnn_train-args...: cnn_train started inside GROUP (made, with LIMIT bytes, or none
# when LIMIT is 0). The group's peak usage is left in $work/cgroup_peak.
in_cgroup() {
  local group=$1 limit=$2
  shift 2
  mkdir "$group"
  if [ "$limit" -gt 0 ]; then
    if [ $cg_v = 1 ]; then echo "$limit" > "$group/memory.limit_in_bytes"; else echo "$limit" > "$group/memory.max"; fi
  fi
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' in_cgroup "$group" "$train" "$@"
}

cgroup_peak() {
  if [ $cg_v = 1 ]; then cat "$1/memory.max_usage_in_bytes"; else cat "$1/memory.peak"; fi
}

# Removes the group once its processes are gone (a kill's last moments can keep it busy briefly).
remove_group() {
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do rmdir "$1" 2>/dev/null && return; sleep 0.2; done
}

memory_cgroup_trials() {
  local kind=memory-cgroup timeout=10 margin=30 why peak copy=$work/rank_data killed=0 finished=0
  if ! find_memory_cgroup > "$work/cgroup_why"; then
    why=$(cat "$work/cgroup_why")
    echo "== $kind: skipped: $why"
    note "$kind" "skipped: $why;"
    trials_of[$kind]=0
    table_rows+=("$kind")
    return
  fi
  mkdir -p "$copy"
  cp -n "$data_dir"/* "$copy"/
  local ref_group=$cg_parent/faults_ref_$$
  # shellcheck disable=SC2046
  in_cgroup "$ref_group" 0 $(data_dir=$copy train_args "$work/cg_ref" 2) --nproc 2 --timeout $timeout \
    > "$work/cg_ref.log" 2>&1 || { cat "$work/cg_ref.log"; echo "faults.sh: the uncapped 2-rank run failed" >&2; exit 1; }
  peak=$(cgroup_peak "$ref_group")
  remove_group "$ref_group"
  echo "== $kind: $trials trials, a cgroup v$cg_v memory limit drawn from [40%, 100%] of the peak $((peak >> 20)) MiB"
  for ((t = 0; t < trials; t++)); do
    hold_while_paused
    local dir=$work/$kind/$t group=$cg_parent/faults_${$}_$t cap pid rc ended=1 verdict=survived detail=""
    mkdir -p "$dir"
    cap=$(( peak * 40 / 100 + $(draw $(( peak * 60 / 100 ))) ))
    # shellcheck disable=SC2046
    in_cgroup "$group" "$cap" $(data_dir=$copy train_args "$dir/ckpt" 2) --nproc 2 --timeout $timeout \
      > "$dir/run.log" 2>&1 &
    pid=$!
    wait_ended "$pid" $((timeout + margin + 60)) || ended=0
    if [ $ended = 0 ]; then
      verdict=lost detail="still running $((timeout + margin + 60)) s later"
      kill -9 $(cat "$group/cgroup.procs") 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    rc=$?
    if [ $verdict = survived ]; then
      if [ $rc = 0 ]; then
        finished=$((finished + 1))
      elif grep -qE "launcher: rank [0-9]+ \(pid [0-9]+\) was killed by signal 9 .*: the kernel's out-of-memory killer" "$dir/run.log"; then
        killed=$((killed + 1))
      elif grep -qE "host out of memory: asked for [0-9]+ bytes" "$dir/run.log"; then
        killed=$((killed + 1))
      else
        verdict=lost detail="exit $rc without the out-of-memory cause named: $(tail -1 "$dir/run.log")"
      fi
    fi
    for f in "$dir"/ckpt/*.safetensors; do
      [ -e "$f" ] || continue
      if ! "$train" --cpu --dataset fashion-mnist --data-dir "$copy" --limit-test 64 --eval-only "$f" > "$dir/eval.log" 2>&1; then
        verdict=lost detail="$detail; $f does not load: $(tail -1 "$dir/eval.log")"
      fi
    done
    remove_group "$group"
    [ $verdict = lost ] && tail -8 "$dir/run.log"
    record "$kind" $verdict "trial $t (limit $((cap >> 20)) MiB, exit $rc): $detail (log $dir/run.log)"
  done
  note "$kind" "finished: $finished, a rank killed by the OOM killer and named: $killed;"
}
