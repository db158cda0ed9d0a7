"""Wall time of evaluating one workload of a ~100 us kernel: 5 correctness trials plus timing.

Measured with the workers already started (the cost per workload in a run over many workloads),
and once cold (worker start and build included).

    python benchmarks/eval_overhead.py [--size 26214400] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=26_214_400, help="fp32 elements per input (2 inputs, 1 output)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--launch-gate", action=argparse.BooleanOptionalAction, default=True, help="time with the launch gate (EvalOptions.launch_gate; on by default)")
    args = parser.parse_args()

    from solbench.bench.orchestrator import EvalOptions, EvaluationRun
    from solbench.data.inline import inline_problem, inline_solution

    problem = inline_problem(
        "add_overhead", "import torch\n\ndef run(a, b):\n    return a + b\n",
        {"a": ([args.size], "float32"), "b": ([args.size], "float32")}, {"c": ([args.size], "float32")},
        tolerance={"max_atol": 1e-6, "max_rtol": 1e-6},
    )
    solution = inline_solution("add-torch", problem.name, "pytorch", "k.py::add", {"k.py": "import torch\n\ndef add(a, b, c):\n    torch.add(a, b, out=c)\n"})
    with tempfile.TemporaryDirectory() as tmp:
        options = EvalOptions(device=args.device, trials=5, cache_root=Path(tmp), seed=3, launch_gate=args.launch_gate)
        cold_start = time.perf_counter()
        run = EvaluationRun(problem, solution, options)
        try:
            run.start()
            started = time.perf_counter() - cold_start
            walls, kernel, environment = [], None, {}
            for _ in range(args.repeats + 1):
                begin = time.perf_counter()
                trace = run.evaluate_workload(problem.workloads[0])
                walls.append(time.perf_counter() - begin)
                assert trace.evaluation.status.value == "PASSED", trace.evaluation.log
                kernel = trace.evaluation.performance
                environment = trace.evaluation.environment
        finally:
            run.close()
    print(f"kernel: {kernel.latency_ms:.4f} ms median over {kernel.iterations} timed calls ({kernel.timing_method}; launch gate {'on' if args.launch_gate else 'off'})")
    print(f"sandbox: {environment.get('sandbox')}; outputs crossed by {environment.get('transfer')}")
    print(f"workers started and solution built in {started:.2f} s (cold, once per run)")
    print(f"one workload (5 trials + timing), first: {walls[0]:.3f} s; then median of {args.repeats}: {statistics.median(walls[1:]):.3f} s"
          f" (min {min(walls[1:]):.3f}, max {max(walls[1:]):.3f})")


if __name__ == "__main__":
    main()
