"""Where an evaluation's time goes: the references of a fixed mix of bundled problems, evaluated as
`solbench run` does, with the seconds of each phase that every trace records (Evaluation.phases).

Per problem: the start-up before the first workload (reference worker, solution worker and build),
the median wall time of one published workload, the time of the hidden workloads, and each phase's
share of the problem's whole evaluation. With --reuse-reference the problems share one worker pair
(the reference worker stays alive across them; each solution still gets a fresh solution worker),
and the start-up saved is the difference between the two runs.

    python benchmarks/eval_throughput.py [--device cpu] [--workloads smallest:2] [--hidden 1] [--reuse-reference]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

# On a GPU: every bundled problem (the mix of issue 14: bf16/fp8 GEMMs, norms, attention, MoE routing and
# gathers). On a CPU: these five, small enough there (embedding_llama3_8b takes minutes per workload: a 128k x 4096 table).
MIX = ("rmsnorm_llama3_8b", "silu_and_mul_llama3_8b", "softmax_vit_large_attention", "rope_llama3_8b", "fused_add_rmsnorm_llama3_8b")
WORKLOAD_PHASES = ("inputs", "reference", "correctness", "precision", "timing", "verify", "sol", "other")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=None, help="bundled problem names (default: all on a GPU, a small mix on a CPU)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workloads", default="smallest:2", help="published workloads per problem (solbench.data.selection)")
    parser.add_argument("--hidden", type=int, default=1, help="hidden workloads per problem")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=1.0, help="timing budget per workload")
    parser.add_argument("--reuse-reference", action="store_true", help="one worker pair for all problems (the reference worker is kept)")
    parser.add_argument("--no-start-ahead", action="store_true", help="with --reuse-reference: do not start the next solution's worker ahead")
    args = parser.parse_args()

    from solbench.bench.orchestrator import EvalOptions, evaluate, reference_solution, resolve_device
    from solbench.bench.workers import WorkerPair
    from solbench.data.loaders import load_problems
    from solbench.data.selection import choose_workloads
    from solbench.dataset import bundled_problems_path

    root = bundled_problems_path()
    names = args.problems or (sorted(p.name for p in root.iterdir() if (p / "definition.json").is_file()) if args.device != "cpu" else list(MIX))
    problems = load_problems([root / name for name in names])
    with tempfile.TemporaryDirectory() as cache:
        options = EvalOptions(device=args.device, trials=args.trials, hidden=args.hidden, unaligned=False, budget_s=args.budget_s,
                              cache_root=Path(cache), seed=1)
        pair = WorkerPair.for_options(resolve_device(args.device), options) if args.reuse_reference else None
        rows, totals = [], {}
        began = time.perf_counter()
        try:
            trimmed = [dataclasses.replace(p, workloads=choose_workloads(p, args.workloads), workload_lines=[]) for p in problems]
            solutions = [reference_solution(problem) for problem in trimmed]
            if pair is not None:
                pair.start_ahead = pair.start_ahead and not args.no_start_ahead
            for index, problem in enumerate(trimmed):
                if pair is not None:  # as the serial executor does: the next solution's worker starts during this evaluation
                    pair.plan_next(solutions[index + 1:index + 1 + pair.spares_ahead])
                started = time.perf_counter()
                traces = evaluate(problem, solutions[index], options, workers=pair)
                rows.append((problem.name, traces, time.perf_counter() - started))
        finally:
            if pair is not None:
                pair.close()
                pair.session.close()
        elapsed = time.perf_counter() - began
    print(f"device {args.device}; workloads {args.workloads} + {args.hidden} hidden; {args.trials} trials; timing budget {args.budget_s:g} s; "
          f"reference worker {'kept across problems' if args.reuse_reference else 'started per problem'}"
          + (f"; next solution worker {'not ' if args.no_start_ahead or args.device == 'cpu' else ''}started ahead" if args.reuse_reference else ""))
    header = f"{'problem':30} {'status':>8} {'start-up':>9} {'workload':>9} {'hidden':>8} {'wall':>8}  " + " ".join(f"{p:>11}" for p in WORKLOAD_PHASES)
    print(header)
    print("-" * len(header))
    for name, traces, wall in rows:
        phases = [trace.evaluation.phases or {} for trace in traces]
        startup = sum(p.get("start", 0.0) + p.get("build", 0.0) for p in phases)
        published = [sum(p.get(k, 0.0) for k in WORKLOAD_PHASES) for t, p in zip(traces, phases) if not t.workload.uuid.startswith("hidden-")]
        hidden = sum(sum(p.get(k, 0.0) for k in WORKLOAD_PHASES) for t, p in zip(traces, phases) if t.workload.uuid.startswith("hidden-"))
        share = {k: sum(p.get(k, 0.0) for p in phases) for k in WORKLOAD_PHASES}
        for key, value in share.items():
            totals[key] = totals.get(key, 0.0) + value
        totals["start-up"] = totals.get("start-up", 0.0) + startup
        passed = sum(t.evaluation.status.value == "PASSED" for t in traces)
        print(f"{name:30} {passed:>4}/{len(traces):<3} {startup:8.2f}s {statistics.median(published) if published else 0:8.3f}s {hidden:7.2f}s "
              f"{wall:7.2f}s  " + " ".join(f"{100 * share[k] / wall:10.1f}%" for k in WORKLOAD_PHASES))
    print("-" * len(header))
    print(f"{'all':30} {'':8} {totals.get('start-up', 0):8.2f}s {'':9} {'':8} {elapsed:7.2f}s  "
          + " ".join(f"{100 * totals.get(k, 0) / elapsed:10.1f}%" for k in WORKLOAD_PHASES))
    print(f"start-up is {100 * totals.get('start-up', 0) / elapsed:.1f}% of the wall time")
    startups = [sum((t.evaluation.phases or {}).get("start", 0.0) + (t.evaluation.phases or {}).get("build", 0.0) for t in traces) for _, traces, _ in rows]
    per_problem = [[sum((t.evaluation.phases or {}).get(k, 0.0) for k in WORKLOAD_PHASES) for t in traces] for _, traces, _ in rows]
    workloads = [w for times in per_problem for w in times]
    later = [w for times in per_problem[1:] for w in times] or workloads  # the first problem pays the run's one-time costs (first SOL capture)
    print(f"start-up per problem: median {statistics.median(startups):.2f} s (after the first: {statistics.median(startups[1:] or startups):.2f} s); "
          f"per workload (published and hidden): median {statistics.median(workloads):.3f} s, mean {statistics.fmean(workloads):.3f} s "
          f"(after the first problem: mean {statistics.fmean(later):.3f} s)")
    iterations = [(t.evaluation.performance.iterations, (t.evaluation.phases or {}).get("timing", 0.0)) for _, traces, _ in rows for t in traces
                  if t.evaluation.performance is not None and t.evaluation.performance.iterations]
    if iterations:
        print("timed iterations per workload: " + ", ".join(f"{n} in {s:.2f} s" for n, s in iterations))


if __name__ == "__main__":
    main()
