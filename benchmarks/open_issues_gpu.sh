#!/usr/bin/env bash
# The GPU checks of issues 30, 31 and 32 in one device call (each group under its own limits). Run from the
# repository root with PYTHONPATH=src (pydantic, cupti and the serve extra's wheels installed):
#   bash benchmarks/open_issues_gpu.sh [profile] [energy] [serve]   (default: all three, about 11.5 minutes: give SERVE_LIMIT=400 to fit one 10-minute call)
#   profile  benchmarks/profile_gpu.sh (issue 31: GPU tests of profile and memcheck, a profile, memcheck's cost; 275 s at most)
#   energy   benchmarks/energy_step_probe.py (issue 32: what one step of an energy window costs), benchmarks/energy_method_probe.py
#            (per-step, batched and pooled windows of small calls: joules per call and their CV) and pytest -m gpu tests/energy (255 s)
#   serve    benchmarks/serve_at_scale.py with the pool executor over the bundled set (issue 30; SERVE_LIMIT s, default 540)
# Only 8 files come back from a device call: $OUT gets summary.txt (every step's line and the probe) and logs.tgz
# (everything, packed again after each group, so that a group cut short still leaves the ones before it).
set -uo pipefail
FINAL=${OUT:-/tmp/open-issues-gpu}
OUT=$(mktemp -d)  # the steps' logs (gpu_steps.sh writes under $OUT)
export PYTHONUNBUFFERED=1 COLUMNS=200 OUT
mkdir -p "$FINAL"
source "$(dirname "${BASH_SOURCE[0]}")/gpu_steps.sh"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(profile energy serve)
for group in "${steps[@]}"; do
  case $group in
    profile) OUT="$OUT/profile" bash "$(dirname "${BASH_SOURCE[0]}")/profile_gpu.sh"; cat "$OUT/profile/summary.txt" >> "$OUT/summary.txt" ;;
    energy)
      step energy-probe 45 python3 benchmarks/energy_step_probe.py --repeats 100
      cat "$OUT/energy-probe.log" >> "$OUT/summary.txt"
      step energy-method 130 python3 benchmarks/energy_method_probe.py --problems rmsnorm_llama3_8b silu_and_mul_llama3_8b --repeats 4 \
        --json "$OUT/energy-method.json"
      cat "$OUT/energy-method.log" >> "$OUT/summary.txt"
      step energy-tests 80 python3 -m pytest -o addopts="" -q -s -p no:cacheprovider -m gpu tests/energy
      tail -n 3 "$OUT/energy-tests.log" >> "$OUT/summary.txt" ;;
    serve)
      mkdir -p "$OUT/serve"
      step serve "${SERVE_LIMIT:-540}" python3 benchmarks/serve_at_scale.py --executor pool --device cuda --workloads smallest:1 \
        --timeout $(( ${SERVE_LIMIT:-540} - 20 )) --out "$OUT/serve"
      tail -n 30 "$OUT/serve.log" >> "$OUT/summary.txt" ;;
    *) echo "unknown group: $group (profile, energy, serve)" >&2; exit 2 ;;
  esac
  cp "$OUT/summary.txt" "$FINAL/summary.txt"
  tar -C "$OUT" -czf "$FINAL/logs.tgz" .
done
