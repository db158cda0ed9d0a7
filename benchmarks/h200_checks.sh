#!/usr/bin/env bash
# One device call that runs every GPU check of the evaluator, each step under its own time limit and
# writing its log to $OUT as it goes (a step that hangs costs its limit, not the call).
#   run on the GPU machine from the repository root, after installing the wheels (see README):
#   bash benchmarks/h200_checks.sh [STEP...]   steps: gate gpu-tests gpu-other corpus legit overhead overhead-ungated ncu-gemm ncu-memory
#        synthetic tightness verify-bundled verify-synthetic self-check
#        throughput throughput-reuse throughput-no-ahead run-bundled run-models run-examples survey
#        self-check-all models-all verify-all verify-slow restore
#   SYNTHETIC (default /tmp/syn): where the synthetic dataset is written; VERIFY_SUBSET: problem folders of it to verify
#   (a glob under $SYNTHETIC, default all; SELF_CHECK_SUBSET likewise); VERIFY_WORKLOADS (default spread:2); VERIFY_COMPILE (default: default;
#   none: eager only); VERIFY_BUDGET (s per workload and candidate, default 1); VERIFY_LIMIT (s per verify step, default 560);
#   SELF_CHECK_SEEDS (default 1 2); RUN_WORKLOADS (default spread:2), RUN_COMPILE (baseline compile modes, default: default),
#   RUN_PROBLEMS (problem folders, default: the bundled ones), RUN_LIMIT (s, default 330)
#   self-check-all / models-all: every workload of the fixture + synthetic set (seeds SELF_CHECK_SEEDS) / of solbench:models
#   (seed 1) against itself, correctness only, SWEEP_SHARDS / MODELS_SHARDS runs sharing the GPU, stopped after SWEEP_LIMIT - 40 s
#   (default 540); their traces go under WORK (default /tmp/h200-work); a problem that ran out of memory beside the others runs again alone;
#   SWEEP_RESUME=1 continues the traces already under WORK (to span calls: bring them back packed, and unpack them with the step
#   restore: SWEEP_STATE=the .tgz, SWEEP_PARTS=its folders to take, e.g. self-check-all; default all); with it,
#   SWEEP_RETRY_FAILURES=1 evaluates again every workload that did not pass (a sweep resumed after a fix), not only memory failures.
#   verify-all: fixture, bundled and synthetic (but 173-176) in one sol --verify; verify-slow: synthetic 173-176 alone (eager references of seconds
#   per call; SLOW_PROBLEMS, a glob of their numbers, picks some, e.g. 17[4-6]).
set -uo pipefail
OUT=${OUT:-/tmp/h200-checks}
mkdir -p "$OUT"
steps=("$@")
SYNTHETIC=${SYNTHETIC:-/tmp/syn}
VERIFY_SUBSET=${VERIFY_SUBSET:-*/*}
VERIFY_WORKLOADS=${VERIFY_WORKLOADS:-spread:2}
VERIFY_COMPILE=${VERIFY_COMPILE:-default}
VERIFY_BUDGET=${VERIFY_BUDGET:-1.0}
VERIFY_LIMIT=${VERIFY_LIMIT:-560}
SELF_CHECK_SUBSET=${SELF_CHECK_SUBSET:-*/*}
SELF_CHECK_WORKLOADS=${SELF_CHECK_WORKLOADS:-smallest:2}
SELF_CHECK_SEEDS=${SELF_CHECK_SEEDS:-1 2}
RUN_WORKLOADS=${RUN_WORKLOADS:-spread:2}
RUN_COMPILE=${RUN_COMPILE:-default}
RUN_PROBLEMS=${RUN_PROBLEMS:-}  # problem folders for run-bundled (default: the bundled problems)
RUN_LIMIT=${RUN_LIMIT:-330}
WORK=${WORK:-/tmp/h200-work}  # bulky outputs (sharded sweeps' traces and run folders); pack what should come back into $OUT
SWEEP_LIMIT=${SWEEP_LIMIT:-540}; SWEEP_SHARDS=${SWEEP_SHARDS:-6}; MODELS_SHARDS=${MODELS_SHARDS:-6}  # 20 runs at a time filled the H200 (2026-12-02)
[ ${#steps[@]} -eq 0 ] && steps=(gate gpu-tests corpus overhead)

source "$(dirname "${BASH_SOURCE[0]}")/gpu_steps.sh"

for name in "${steps[@]}"; do
  case $name in
    gate) step gate 90 python3 -m pytest -q -p no:cacheprovider tests/bench/test_gpu_timing.py ;;
    gpu-tests) step gpu-tests 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests/bench tests/sol ;;
    gpu-other) step gpu-other 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/cli tests/examples tests/exec ;;
    corpus) step corpus 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests/exploits ;;
    overhead) step overhead 120 python3 benchmarks/eval_overhead.py --repeats 3 ;;
    overhead-ungated) step overhead-ungated 120 python3 benchmarks/eval_overhead.py --repeats 3 --no-launch-gate ;;
    ncu-gemm) step ncu-gemm 560 python3 benchmarks/timing_vs_ncu.py --kinds gemm --json "$OUT/ncu-gemm.json" ;;
    legit) step legit 420 python3 -m pytest -q -p no:cacheprovider -m gpu tests/exploits -k legit ;;
    synthetic) step synthetic 120 python3 -m solbench.dataset.synthetic "$SYNTHETIC" ;;
    tightness) step tightness 300 python3 benchmarks/sol_tightness_gpu.py --json "$OUT/tightness.json" ;;
    verify-bundled) step verify-bundled "$VERIFY_LIMIT" python3 -m solbench.cli sol --verify tests/fixtures/sol_execbench_layout src/solbench/dataset/problems \
        --workloads "$VERIFY_WORKLOADS" --compile-mode "$VERIFY_COMPILE" --budget "$VERIFY_BUDGET" --synthesize-missing-blobs -o "$OUT/verify-bundled.jsonl" ;;
    verify-synthetic) step verify-synthetic "$VERIFY_LIMIT" python3 -m solbench.cli sol --verify $(ls -d $SYNTHETIC/$VERIFY_SUBSET) \
        --workloads "$VERIFY_WORKLOADS" --compile-mode "$VERIFY_COMPILE" --budget "$VERIFY_BUDGET" -o "$OUT/verify-synthetic.jsonl" ;;
    self-check) step self-check 560 python3 benchmarks/reference_self_check.py tests/fixtures/sol_execbench_layout $(ls -d $SYNTHETIC/$SELF_CHECK_SUBSET) \
        --seeds $SELF_CHECK_SEEDS --no-timing --workloads "$SELF_CHECK_WORKLOADS" --out "$OUT/self-check" ;;
    throughput) step throughput 300 python3 benchmarks/eval_throughput.py --device cuda --workloads smallest:2 --hidden 1 ;;
    throughput-reuse) step throughput-reuse 300 python3 benchmarks/eval_throughput.py --device cuda --workloads smallest:2 --hidden 1 --reuse-reference ;;
    throughput-no-ahead) step throughput-no-ahead 300 python3 benchmarks/eval_throughput.py --device cuda --workloads smallest:2 --hidden 1 --reuse-reference --no-start-ahead ;;
    run-bundled) step run-bundled "$RUN_LIMIT" python3 -m solbench.cli run $RUN_PROBLEMS --workloads "$RUN_WORKLOADS" --compile-modes "$RUN_COMPILE" \
        --run-dir "$OUT/run-bundled" --baselines "$OUT/baselines" ;;
    run-models) step run-models "$RUN_LIMIT" python3 -m solbench.cli run solbench:models --workloads "$RUN_WORKLOADS" --compile-modes "$RUN_COMPILE" \
        --run-dir "$OUT/run-models" --baselines "$OUT/baselines" ;;
    run-examples) step run-examples 120 python3 -m solbench.cli run src/solbench/dataset/problems/silu_and_mul_llama3_8b --solutions examples \
        --workloads "$RUN_WORKLOADS" --compile-modes "$RUN_COMPILE" --run-dir "$OUT/run-examples" --baselines "$OUT/baselines" ;;
    self-check-all) step self-check-all "$SWEEP_LIMIT" python3 benchmarks/reference_self_check.py tests/fixtures/sol_execbench_layout "$SYNTHETIC" \
        --seeds $SELF_CHECK_SEEDS --no-timing --workloads all --shards "$SWEEP_SHARDS" --parallel "${SWEEP_PARALLEL:-$SWEEP_SHARDS}" --limit $((SWEEP_LIMIT - 40)) --out "$WORK/self-check-all" ${SWEEP_RESUME:+--resume} ${SWEEP_RETRY_FAILURES:+--retry-failures} ;;
    models-all) step models-all "$SWEEP_LIMIT" python3 benchmarks/reference_self_check.py solbench:models --seeds 1 --no-timing --workloads all \
        --shards "$MODELS_SHARDS" --parallel "$MODELS_SHARDS" --limit $((SWEEP_LIMIT - 40)) --out "$WORK/models-all" ${SWEEP_RESUME:+--resume} ${SWEEP_RETRY_FAILURES:+--retry-failures} ;;
    restore) step restore 60 tar xzf "${SWEEP_STATE:?SWEEP_STATE names the packed traces of a sweep}" -C "$(mkdir -p "$WORK" && echo "$WORK")" ${SWEEP_PARTS:-} ;;
    verify-slow) step verify-slow "$VERIFY_LIMIT" python3 -m solbench.cli sol --verify $(ls -d $SYNTHETIC/L2/${SLOW_PROBLEMS:-17[3-6]}_*) --workloads "$VERIFY_WORKLOADS" \
        --compile-mode none --budget "$VERIFY_BUDGET" -o "$OUT/verify-slow.jsonl" ;;  # SSM/linear-attention backward: eager calls of seconds each
    verify-all) step verify-all "$VERIFY_LIMIT" python3 -m solbench.cli sol --verify tests/fixtures/sol_execbench_layout src/solbench/dataset/problems \
        $(ls -d $SYNTHETIC/*/* | grep -v '/L2/17[3-6]_') --workloads "$VERIFY_WORKLOADS" --compile-mode "$VERIFY_COMPILE" \
        --budget "$VERIFY_BUDGET" --synthesize-missing-blobs -o "$OUT/verify-all.jsonl" ;;  # all but the slow four: verify-slow
    survey) step survey 560 python3 tests/exploits/survey.py --device cuda --parallel 6 --json "$OUT/survey.json" ;;  # issue 12: what each corpus sample gets
    ncu-memory) step ncu-memory 560 python3 benchmarks/timing_vs_ncu.py --kinds memory --json "$OUT/ncu-memory.json" ;;
    *) echo "unknown step $name" >&2; exit 2 ;;
  esac
done
