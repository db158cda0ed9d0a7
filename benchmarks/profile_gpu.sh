#!/usr/bin/env bash
# Issue 31 items 1-2 (solbench profile, --memcheck) on the H200, in one device call of at most ~5 minutes
# (each step under its own limit: 275 s in all, 300 s where the profile is made again with --sandbox none). Run from the repository root with PYTHONPATH=src:
#   bash benchmarks/profile_gpu.sh
# Writes under $OUT (6 files):
#   summary.txt     the tools' versions; one line per step: rc and seconds; the last lines of the tests
#   gpu-tests.log   pytest -m gpu tests/profile (-s: each test prints its numbers as one JSON line): the profile of a 2^27-element
#                   fp32 scale (DRAM bytes within 10% of 8N), memcheck of an unmasked read in CUDA C++ and in Triton (INCORRECT with
#                   the report; PASSED without --memcheck), eval --memcheck of the PyTorch example (clean)
#   profile.json    solbench profile --json: the Triton example on silu_and_mul_llama3_8b, 4096 tokens (sandboxed; where ncu may not
#                   read the counters in the sandbox, ERR_NVGPUCTRPERM, again with --sandbox none, said in summary.txt)
#   profile.log     its stderr, and the same profile as `solbench profile` prints it (rendered from profile.json)
#   memcheck.txt    per example (pytorch, triton; smallest workload): eval --memcheck's verdict, seconds per sanitizer tool (the
#                   sanitized evaluation: worker start under the sanitizer, build, trial, exit), the command's wall time, the phases
#   memcheck.log    that script's stderr
set -uo pipefail
OUT=${OUT:-/tmp/profile-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=200
export SOLBENCH_BUILD_CACHE=${SOLBENCH_BUILD_CACHE:-/tmp/solbench-builds}  # one build cache for every step
: > "$OUT/summary.txt"

source "$(dirname "${BASH_SOURCE[0]}")/gpu_steps.sh"

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; ncu --version | tail -n 1; compute-sanitizer --version | tail -n 1
  python3 -c "from solbench.bench.sandbox import available_level; print('sandbox level:', available_level('auto'))"; } >> "$OUT/summary.txt" 2>&1

step gpu-tests 190 python3 -m pytest -o addopts="" -q -s -p no:cacheprovider -m gpu tests/profile
tail -n 6 "$OUT/gpu-tests.log" >> "$OUT/summary.txt"

PROFILE=(python3 -m solbench.cli profile silu_and_mul_llama3_8b --solution examples/silu_and_mul_triton/solution.json --workload e090157f --json)
started=$SECONDS
timeout --kill-after=10 35 "${PROFILE[@]}" > "$OUT/profile.json" 2> "$OUT/profile.log"
rc=$?
echo "profile: rc=$rc in $((SECONDS - started)) s (limit 35 s)" | tee -a "$OUT/summary.txt"
if grep -q ERR_NVGPUCTRPERM "$OUT/profile.log"; then
  echo "profile: ncu may not read the counters in the sandbox; again with --sandbox none" | tee -a "$OUT/summary.txt"
  started=$SECONDS
  timeout --kill-after=10 25 "${PROFILE[@]}" --sandbox none > "$OUT/profile.json" 2>> "$OUT/profile.log"
  echo "profile --sandbox none: rc=$? in $((SECONDS - started)) s (limit 25 s)" | tee -a "$OUT/summary.txt"
fi
python3 - "$OUT/profile.json" >> "$OUT/profile.log" 2>&1 <<'PY'
import sys
from rich.console import Console
from solbench.profile.model import load_profile
from solbench.report.profile_tables import decomposition_table, kernels_table, sol_lines
try:
    report = load_profile(sys.argv[1])
except Exception as exc:  # no profile was made: the reason is above, in the profile's stderr
    sys.exit(f"no profile to show: {exc}")
console = Console(width=200)
console.print(kernels_table(report))
for line in sol_lines(report) + [f"note: {n}" for n in report.notes + (report.decomposition.notes if report.decomposition else [])]:
    console.print(line, markup=False, highlight=False)
if report.decomposition:
    console.print(decomposition_table(report))
print("gap:", report.gap, "seconds:", report.seconds)
PY

started=$SECONDS
timeout --kill-after=10 50 python3 benchmarks/memcheck_cost.py silu_and_mul_pytorch silu_and_mul_triton > "$OUT/memcheck.txt" 2> "$OUT/memcheck.log"
echo "memcheck-cost: rc=$? in $((SECONDS - started)) s (limit 50 s)" | tee -a "$OUT/summary.txt"
