"""Feedback for kernel authors: where the time goes against the speed of light, and memory checks.

- `solbench profile` (runner.py): the solution runs in the evaluator's own worker set-up (the same
  sandbox, inputs and build) with Nsight Compute (`ncu`) as the solution worker's launcher; its
  per-kernel metrics (ncu_csv.py, metrics.py) are joined with the SOL analysis and a CUPTI timeline of
  the call (timeline.py) into a gap decomposition (gap.py) and one JSON document (model.py, join.py).
- `--memcheck` (memcheck.py): the solution, once, under compute-sanitizer (memcheck; racecheck where it
  uses shared memory, racecheck.py) on its smallest workload; the sanitizer's first report
  (sanitizer.py) makes it INCORRECT.
- tools.py finds `ncu` and `compute-sanitizer`; run_profiles.py profiles every solution of a finished
  run (`solbench run --profile`).
"""
