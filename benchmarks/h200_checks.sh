#!/usr/bin/env bash
# One device call that runs every GPU check of the evaluator, each step under its own time limit and
# writing its log to $OUT as it goes (a step that hangs costs its limit, not the call).
#   run on the GPU machine from the repository root, after installing the wheels (see README):
#   bash benchmarks/h200_checks.sh [STEP...]   steps: gate gpu-tests corpus overhead overhead-ungated ncu-gemm ncu-memory
set -uo pipefail
OUT=${OUT:-/tmp/h200-checks}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(gate gpu-tests corpus overhead)

step() {  # name, limit in seconds, command...
  local name=$1 limit=$2
  shift 2
  local started=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc in $((SECONDS - started)) s (limit $limit s)" | tee -a "$OUT/summary.txt"
}

for name in "${steps[@]}"; do
  case $name in
    gate) step gate 90 python3 -m pytest -q -p no:cacheprovider tests/bench/test_gpu_timing.py ;;
    gpu-tests) step gpu-tests 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/bench tests/sol ;;
    corpus) step corpus 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests/exploits ;;
    overhead) step overhead 120 python3 benchmarks/eval_overhead.py --repeats 3 ;;
    overhead-ungated) step overhead-ungated 120 python3 benchmarks/eval_overhead.py --repeats 3 --no-launch-gate ;;
    ncu-gemm) step ncu-gemm 560 python3 benchmarks/timing_vs_ncu.py --kinds gemm --json "$OUT/ncu-gemm.json" ;;
    ncu-memory) step ncu-memory 560 python3 benchmarks/timing_vs_ncu.py --kinds memory --json "$OUT/ncu-memory.json" ;;
    *) echo "unknown step $name" >&2; exit 2 ;;
  esac
done
