# Fuzzing at depth: each reader (CIFAR-10, idx, gzip, image, safetensors, and the ONNX importer where
# libonnx-dev is) under libFuzzer for $fuzz_runs executions (scripts/fuzz.sh; CI runs it for seconds). A row
# per reader: trials are executions; a crash, sanitizer report, leak or timeout is a loss (its input is left
# in build-fuzz/artifacts/). FUZZ_TARGETS="image onnx" runs some only.

fuzz_trials() {
  local targets=${FUZZ_TARGETS:-cifar10 idx gzip image safetensors onnx}
  for target in $targets; do
    hold_while_paused
    if [ "$target" = onnx ] && ! grep -q "ONNX import/export ON" build-fuzz/configure.log 2>/dev/null &&
       ! [ -f /usr/include/onnx/onnx_pb.h ]; then
      echo "== fuzz-onnx: skipped: no libonnx-dev"
      continue
    fi
    local kind=fuzz-$target log=$work/fuzz_$target.log
    echo "== $kind: $fuzz_runs executions"
    if FUZZ_RUNS=$fuzz_runs bash scripts/fuzz.sh "$target" > "$log" 2>&1; then
      trials_of[$kind]=$fuzz_runs
      survived_of[$kind]=$fuzz_runs
      lost_of[$kind]=0
      note "$kind" "$(grep -oE 'stat::number_of_executed_units: [0-9]+' "build-fuzz/fuzz_$target.log" | tail -1 | sed 's/stat::number_of_executed_units: /executed: /')"
    else
      trials_of[$kind]=$fuzz_runs
      survived_of[$kind]=0
      lost_of[$kind]=1
      total_lost=$((total_lost + 1))
      note "$kind" "crashed: see build-fuzz/artifacts/ and $log"
      tail -20 "$log"
    fi
    table_rows+=("$kind")
  done
}
