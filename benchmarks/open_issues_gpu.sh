#!/usr/bin/env bash
# The GPU checks of the issues in one device call each (each group under its own limits). Run from the
# repository root with PYTHONPATH=src (pydantic, cupti and the serve extra's wheels installed):
#   bash benchmarks/open_issues_gpu.sh GROUP...   (default: energy compiled, about 8.5 minutes; scale alone fills a 10-minute call)
#   energy   issue 32: benchmarks/energy_gpu.sh (the step probe, the energy GPU tests, the calibration, and energy_bound.py on
#            three small bundled problems with 5 repeats of rmsnorm: the short-call method's spread and power; 345 s at most)
#   energy-all issue 32: hw calibrate --energy, then benchmarks/energy_bound.py over all 13 bundled problems (eager and
#            compile-default, smallest workload) and 5 repeats of the 4 us SiLU (450 s at most)
#   energy-tight issue 32 in a short call: hw calibrate --energy, then energy_bound.py over the 5 problems where the bound is
#            tightest or the calls are made ahead (the two bf16 GEMMs, the SwiGLU MLP, fused add+RMSNorm, SiLU) and 5 repeats of SiLU (200 s)
#   compiled issue 28: pytest -m gpu of the compiled candidates and the executors (tests/bench/test_compiled_reference.py, tests/exec; 150 s)
#   gpu-tests every gpu-marked test of tests/bench, tests/exec, tests/energy and the exploit corpus, a line per test as it ends
#            (GPU_TESTS_LIMIT s, default 540; on an H100 on 2026-12-07 the quiet form passed 32 tests in 450 s and was cut there
#            without saying which: this form says which test was running when a cut came)
#   scale    issue 28: benchmarks/run_at_scale.py solbench:models --workloads smallest:1, default compile modes, cold then
#            --again over the same baselines (SCALE_LIMIT s for the first run, default 380, and AGAIN_LIMIT s, default 160, for the
#            second, 0 for none; the run folders' logs and the first run's compile-ahead.jsonl are kept; SCALE_WORK=/tmp/...
#            keeps the baselines folder for a next call on the same warm machine; SCALE_ARGS: more options for solbench run,
#            e.g. "--compile-ahead 16")
#   scale-ahead issue 28: cold runs of solbench:models side by side, one per entry of AHEAD_RUNS (default "8:group 8 12 16":
#            COUNT compile processes, held during timed requests; COUNT:group, their whole process groups stopped as before
#            2026-12-08), AHEAD_LIMIT s each (default 120: the four fill a 10-minute call); on an H100 host (2026-12-07) 8
#            processes kept the cores 69% busy and the GPU 6%: the problems scored and compiles done by the cut say what pays
#   defences the worker's pinned objects (CUPTI timer, launch gate, L2 flusher, channel) and hook checks of 2026-12-07 on a
#            GPU: pytest -m gpu of tests/bench/test_gpu_eval.py, test_gpu_timing.py and the exploit corpus (legit samples
#            must PASS, exploits be caught; 360 s: 180 s for the corpus on an H200 on 2026-12-01)
#   profile  benchmarks/profile_gpu.sh (issue 31: GPU tests of profile and memcheck, a profile, memcheck's cost; 275 s at most)
#   serve    benchmarks/serve_at_scale.py with the pool executor over the bundled set (issue 30; SERVE_LIMIT s, default 540)
#   tolerance issue 28's compiled-candidate fairness: `python -m solbench.dataset.bundle --calibrate-only --calibrate-on cuda` on
#            solbench:models (calibrate-tolerance of the problems in bundle.CALIBRATED, every workload; 300 s at most); the
#            changed workload.jsonl files and MANIFEST.md are in logs.tgz under tolerance/, to be copied back into the set
# Only 8 files come back from a device call: $OUT gets summary.txt (every step's line and the probe) and logs.tgz
# (everything, packed again after each group, so that a group cut short still leaves the ones before it).
set -uo pipefail
FINAL=${OUT:-/tmp/open-issues-gpu}
OUT=$(mktemp -d)  # the steps' logs (gpu_steps.sh writes under $OUT)
export PYTHONUNBUFFERED=1 COLUMNS=200 OUT
mkdir -p "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/gpu_steps.sh"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(energy compiled)
for group in "${steps[@]}"; do
  case $group in
    profile) OUT="$OUT/profile" bash "$(dirname "${BASH_SOURCE[0]}")/profile_gpu.sh"; cat "$OUT/profile/summary.txt" >> "$OUT/summary.txt" ;;
    energy) OUT="$OUT/energy" bash "$(dirname "${BASH_SOURCE[0]}")/energy_gpu.sh"; cat "$OUT/energy/summary.txt" >> "$OUT/summary.txt" ;;
    energy-all)  # issue 32's bound over every bundled problem (the energy group checks three), a fresh calibration first
      mkdir -p "$OUT/energy-all"
      step energy-calibrate 90 python3 -m solbench.cli hw calibrate --energy --base H200 -o "$OUT/energy-all/h200-energy.yaml" --force
      step energy-all 360 python3 benchmarks/energy_bound.py --hardware "$OUT/energy-all/h200-energy.yaml" --out "$OUT/energy-all" \
        --workloads smallest:1 --compile-modes default --limit 330 --repeats 5 --repeat-problem silu_and_mul_llama3_8b src/solbench/dataset/problems
      tail -n 30 "$OUT/energy-all.log" >> "$OUT/summary.txt" ;;
    energy-tight)
      mkdir -p "$OUT/energy-tight"
      step energy-calibrate 90 python3 -m solbench.cli hw calibrate --energy --base H200 -o "$OUT/energy-tight/h200-energy.yaml" --force
      problems=src/solbench/dataset/problems
      step energy-tight 150 python3 benchmarks/energy_bound.py --hardware "$OUT/energy-tight/h200-energy.yaml" --out "$OUT/energy-tight" \
        --workloads smallest:1 --compile-modes default --limit 120 --repeats 5 --repeat-problem silu_and_mul_llama3_8b \
        $problems/gemm_bf16_llama3_8b_qkv_proj $problems/gemm_bf16_llama3_8b_o_proj $problems/swiglu_mlp_llama3_8b \
        $problems/fused_add_rmsnorm_llama3_8b $problems/silu_and_mul_llama3_8b
      tail -n 20 "$OUT/energy-tight.log" >> "$OUT/summary.txt" ;;
    compiled)
      step compiled-tests 150 python3 -m pytest -o addopts="" -q -p no:cacheprovider -m gpu tests/bench/test_compiled_reference.py tests/exec
      tail -n 5 "$OUT/compiled-tests.log" >> "$OUT/summary.txt" ;;
    gpu-tests)
      step gpu-tests "${GPU_TESTS_LIMIT:-540}" python3 -m pytest -o addopts="" -v -p no:cacheprovider -m gpu --durations=15 \
        tests/bench tests/exec tests/energy tests/exploits
      grep -E "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS" "$OUT/gpu-tests.log" | tail -n 60 >> "$OUT/summary.txt"
      tail -n 20 "$OUT/gpu-tests.log" >> "$OUT/summary.txt" ;;
    defences)
      step defences-tests 360 python3 -m pytest -o addopts="" -q -p no:cacheprovider -m gpu tests/bench/test_gpu_eval.py \
        tests/bench/test_gpu_timing.py tests/exploits
      tail -n 8 "$OUT/defences-tests.log" >> "$OUT/summary.txt" ;;
    scale)
      work=${SCALE_WORK:-$OUT/scale-work}  # SCALE_WORK outside $OUT keeps the baselines on a warm machine for a next call
      again=(--again --again-limit "${AGAIN_LIMIT:-160}")
      [ "${AGAIN_LIMIT:-160}" = 0 ] && again=()  # AGAIN_LIMIT=0: the cold run alone (a whole call for it)
      step scale $(( ${SCALE_LIMIT:-380} + ${AGAIN_LIMIT:-160} + 30 )) python3 benchmarks/run_at_scale.py solbench:models --workloads smallest:1 \
        --limit "${SCALE_LIMIT:-380}" ${again[@]+"${again[@]}"} --work "$work" --out "$OUT/scale.json" ${SCALE_ARGS:-}
      cp "$work/first/compile-ahead.jsonl" "$OUT/scale-compile-ahead.jsonl" 2>/dev/null
      [ "$work" = "$OUT/scale-work" ] && rm -rf "$work/baselines"  # the compile cache: too big to pack
      tail -n 40 "$OUT/scale.log" >> "$OUT/summary.txt" ;;
    scale-ahead)  # cold runs side by side, one per entry of AHEAD_RUNS (COUNT or COUNT:group), AHEAD_LIMIT s each
      for entry in ${AHEAD_RUNS:-8:group 8 12 16}; do
        count=${entry%%:*}; scope=process; [ "$entry" != "$count" ] && scope=${entry#*:}; name="$count-$scope"
        step "scale-ahead-$name" $(( ${AHEAD_LIMIT:-120} + 40 )) env SOLBENCH_COMPILE_PAUSE="$scope" python3 benchmarks/run_at_scale.py solbench:models \
          --workloads smallest:1 --limit "${AHEAD_LIMIT:-120}" --work "$OUT/ahead-$name" --out "$OUT/scale-ahead-$name.json" --compile-ahead "$count"
        cp "$OUT/ahead-$name/first/compile-ahead.jsonl" "$OUT/scale-ahead-$name-compile-ahead.jsonl" 2>/dev/null
        rm -rf "$OUT/ahead-$name/baselines"
        grep -E '"problems_scored"|"finished"|cpu_busy|gpu_util|"pauses"|pause_wait_s|"stopped"' "$OUT/scale-ahead-$name.log" | sed "s/^/ahead $name: /" >> "$OUT/summary.txt"
      done ;;
    serve)
      mkdir -p "$OUT/serve"
      step serve "${SERVE_LIMIT:-540}" python3 benchmarks/serve_at_scale.py --executor pool --device cuda --workloads smallest:1 \
        --timeout $(( ${SERVE_LIMIT:-540} - 20 )) --out "$OUT/serve"
      tail -n 30 "$OUT/serve.log" >> "$OUT/summary.txt" ;;
    tolerance)
      models=src/solbench/dataset/models
      step tolerance 300 python3 -m solbench.dataset.bundle "$models" --calibrate-only --calibrate-on cuda
      mkdir -p "$OUT/tolerance"
      cp "$models/MANIFEST.md" "$OUT/tolerance/"
      for name in $(python3 -c "from solbench.dataset.bundle import CALIBRATED; print(' '.join(CALIBRATED))"); do
        mkdir -p "$OUT/tolerance/$name" && cp "$models/$name/workload.jsonl" "$OUT/tolerance/$name/"
      done
      tail -n 40 "$OUT/tolerance.log" >> "$OUT/summary.txt" ;;
    *) echo "unknown group: $group (energy, energy-all, energy-tight, compiled, gpu-tests, defences, scale, scale-ahead, profile, serve, tolerance)" >&2; exit 2 ;;
  esac
  cp "$OUT/summary.txt" "$FINAL/summary.txt"
  tar -C "$OUT" -czf "$FINAL/logs.tgz" .
done
