#!/usr/bin/env bash
# Issue 32 (energy) on the H200, in one device call of about 4-5 minutes (each step under its own limit,
# 345 s in all). Run from the repository root with PYTHONPATH=src (pydantic available):
#   bash benchmarks/energy_gpu.sh
# Writes under $OUT (8 files: all that come back):
#   summary.txt          one line per step: rc and seconds; benchmarks/energy_step_probe.py's costs of a window step
#   gpu-tests.log        pytest -m gpu of tests/energy (copy kernel energy, scaling, windows, calibration to a spec)
#   calibrate.log        `solbench hw calibrate --energy --base H200` (every kernel's mJ/call, W, the fit)
#   h200-energy.yaml     the calibrated spec with its energy block (figures, residuals, date)
#   bench/energy_bound.txt, bench/energy_bound.json, bench/run.log (the run), bench/bench.log (its own output)
#                        benchmarks/energy_bound.py on 3 bundled problems (smallest workload, eager + compile-default),
#                        priced on h200-energy.yaml, and 5 repeats of one workload
set -uo pipefail
OUT=${OUT:-/tmp/energy-gpu}
mkdir -p "$OUT/bench"
export PYTHONUNBUFFERED=1
: > "$OUT/summary.txt"

source "$(dirname "${BASH_SOURCE[0]}")/gpu_steps.sh"

nvidia-smi --query-gpu=name,driver_version,power.draw,power.limit,clocks.sm --format=csv,noheader >> "$OUT/summary.txt" 2>&1
python3 -c "import pynvml; print('nvidia-ml-py', pynvml.__file__)" >> "$OUT/summary.txt" 2>&1

timeout 60 python3 benchmarks/energy_step_probe.py >> "$OUT/summary.txt" 2>&1  # what one window step costs, part by part
step gpu-tests 140 python3 -m pytest -o addopts="" -q -s -p no:cacheprovider tests/energy -m gpu
step calibrate 90 python3 -m solbench.cli hw calibrate --energy --base H200 -o "$OUT/h200-energy.yaml" --force
SPEC="$OUT/h200-energy.yaml"
[ -f "$SPEC" ] || SPEC=H200  # no calibrated spec: the benchmark still measures energies (no E_SOL)
P=src/solbench/dataset/problems
timeout --kill-after=10 115 python3 benchmarks/energy_bound.py --hardware "$SPEC" --out "$OUT/bench" --workloads smallest:1 \
  --compile-modes default --limit 60 --repeats 5 --repeat-problem rmsnorm_llama3_8b \
  $P/rmsnorm_llama3_8b $P/silu_and_mul_llama3_8b $P/gemm_bf16_llama3_8b_o_proj > "$OUT/bench/bench.log" 2>&1
echo "bench: rc=$? (limit 115 s; output in bench/)" | tee -a "$OUT/summary.txt"
tail -n 4 "$OUT/gpu-tests.log" >> "$OUT/summary.txt"
