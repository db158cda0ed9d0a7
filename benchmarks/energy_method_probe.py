"""Which way of stepping an energy window measures small calls? (GPU; issue 32, the open part.)

On the H200 (2026-12-04) the worker's method (each step: fresh inputs, outputs, L2 flush, synchronise,
the call, synchronise) read the 20 us RMSNorm reference at 12-88 mJ per call over 5 repeats (CV 53%):
a step took about 4.5 ms of host time, so the call was under 1% of a step's energy and the difference
of two windows was noise. This probe measures the same calls, through solbench.energy.window's windows
and solbench.energy.reading.per_call, stepped three ways, each --repeats times per problem:

- per-step: as the worker did it until 2026-12-07 (the blank step: the same without the call; the worker
            now makes short calls' inputs ahead of the window: solbench.bench.worker.Worker.energy);
- batched:  a step generates the fresh inputs of B calls, then runs B x (flush, call) with no
            synchronisation between them, then synchronises once (blank: the same without the calls);
            B is the calls in about --batch-s of GPU time, at most --pool-gib of inputs;
- pooled:   the inputs of B calls generated once before the windows and reused by every step (a
            diagnostic of the floor that generation inside the window leaves: it breaks the
            fresh-inputs rule and is no candidate for the evaluator).

    python3 benchmarks/energy_method_probe.py [--problems rmsnorm_llama3_8b silu_and_mul_llama3_8b] [--repeats 5]
        [--window 1.0] [--batch-s 0.01] [--pool-gib 1.0] [--json OUT.json]

Prints, per problem and method: the call's time (timed as the evaluator times it: flushed, CUPTI or CUDA events), the median joules per call over
the repeats, their coefficient of variation, the implied power (J / s of the call), the steps per
second and the blank step's joules. A method fit for small calls has a CV of a few percent and an
implied power between the idle power and the power limit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

DEFAULT_PROBLEMS = ["rmsnorm_llama3_8b", "silu_and_mul_llama3_8b", "gemm_bf16_llama3_8b_o_proj"]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=DEFAULT_PROBLEMS, help="bundled problems (their smallest workload)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--window", type=float, default=1.0, help="seconds of each window (as --energy-window)")
    parser.add_argument("--batch-s", type=float, default=0.01, help="GPU seconds of calls per batched step")
    parser.add_argument("--pool-gib", type=float, default=1.0, help="most GiB of inputs held for one batched step")
    parser.add_argument("--poll", type=float, nargs="+", default=[None], help="seconds between the counter poller's readings, each measured "
                        "in turn (default: solbench.energy.window.POLL_S, the evaluator's)")
    parser.add_argument("--methods", nargs="+", default=["per-step", "batched", "pooled"], choices=["per-step", "batched", "pooled"])
    parser.add_argument("--json", type=Path, help="write every measurement here")
    return parser.parse_args(argv)


def steppers(function: Callable[..., Any], make_inputs: Callable[[int], list[Any]], flush: Callable[[], None], batch: int,
             synchronize: Callable[[], None]) -> dict[str, tuple[Callable[[], None], Callable[[], None]]]:
    """(blank step, call step) of each method; a step of the batched and pooled methods is `batch` calls."""
    trial = iter(range(1, 10**9))
    pool = [make_inputs(-index - 1) for index in range(batch)]
    synchronize()

    def per_step_blank() -> None:
        arguments = make_inputs(next(trial))
        flush()
        synchronize()
        del arguments

    def per_step_call() -> None:
        arguments = make_inputs(next(trial))
        flush()
        synchronize()
        function(*arguments)
        synchronize()

    def batched(with_call: bool) -> Callable[[], None]:
        def step() -> None:
            sets = [make_inputs(next(trial)) for _ in range(batch)]
            for arguments in sets:
                flush()
                if with_call:
                    function(*arguments)
            synchronize()
        return step

    def pooled(with_call: bool) -> Callable[[], None]:
        def step() -> None:
            for arguments in pool:
                flush()
                if with_call:
                    function(*arguments)
            synchronize()
        return step

    return {"per-step": (per_step_blank, per_step_call), "batched": (batched(False), batched(True)), "pooled": (pooled(False), pooled(True))}


def measure_method(counter: Any, blank_step: Callable[[], None], call_step: Callable[[], None], calls_per_step: int, window_s: float,
                   repeats: int, call_s: float, idle_s: float = 0.3, poll_s: float | None = None) -> dict[str, Any]:
    """Joules per call of one method over `repeats` measurements (solbench.energy.window.measure, then
    reading.per_call: the calls' windows less the mean of the blank windows around them)."""
    from solbench.energy.reading import per_call
    from solbench.energy.window import POLL_S, measure

    joules, steps_per_s, blank_j = [], [], []
    for _ in range(repeats):
        readings = measure(counter, blank_step, call_step, window_s, idle_s, poll_s=poll_s or POLL_S)
        reading = per_call(readings.idle, readings.blank, readings.loop, readings.blank_after)
        joules.append(reading.joules / calls_per_step)
        steps_per_s.append(readings.loop.steps / readings.loop.seconds)
        blank_j.append(reading.overhead_j)
    mean = statistics.mean(joules)
    median = statistics.median(joules)
    return {"call_s": call_s, "batch": calls_per_step, "joules": joules, "median_j": median,
            "cv": statistics.stdev(joules) / abs(mean) if len(joules) > 1 and mean else float("nan"),
            "implied_power_w": median / call_s if call_s > 0 else float("nan"), "steps_per_s": statistics.median(steps_per_s),
            "blank_step_j": statistics.median(blank_j)}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import torch

    from solbench.bench.timing import CacheFlusher, make_timer
    from solbench.bench.timing import measure as time_calls
    from solbench.data.inputs import generate_inputs
    from solbench.data.loaders import load_problems
    from solbench.data.reference import reference_module
    from solbench.dataset import bundled_problems_path
    from solbench.energy.counter import open_counter
    from solbench.energy.window import CounterStuck
    from solbench.sol.capture import input_bytes

    if not torch.cuda.is_available():
        print("error: needs a CUDA GPU", file=sys.stderr)
        return 2
    counter, note = open_counter("cuda")
    if counter is None:
        print(f"error: {note}", file=sys.stderr)
        return 2
    problems = {p.name: p for p in load_problems([bundled_problems_path()])}
    unknown = [name for name in args.problems if name not in problems]
    if unknown:
        print(f"error: not a bundled problem: {', '.join(unknown)} (bundled: {', '.join(sorted(problems))})", file=sys.stderr)
        return 2
    flush, (timer, _) = CacheFlusher("cuda"), make_timer("cuda")

    def median_s(call: Callable[[], Any]) -> float:  # as the evaluator times a call: flushed, its best timer, 20 samples
        return time_calls(lambda: call, timer, flush, min_iterations=20, max_iterations=20).median_ms / 1e3

    rows: list[dict[str, Any]] = []
    print(f"{torch.cuda.get_device_name()}: {args.repeats} repeats, windows of {args.window:g} s, batches of about {args.batch_s:g} s")
    for name in args.problems:
        problem = problems[name]
        workload = min(problem.workloads, key=lambda w: sum(v for v in w.axes.values() if isinstance(v, int)))
        function = reference_module(problem.definition).run

        def make_inputs(trial: int, problem: Any = problem, workload: Any = workload) -> list[Any]:
            return list(generate_inputs(problem, workload, seed=7, trial=trial, device="cuda").values())

        sample = make_inputs(0)
        seconds = median_s(lambda: function(*sample))
        flush_s = median_s(flush)  # the flush itself (after another)
        set_bytes = max(input_bytes(problem, workload, problem.axes(workload)), 1)
        batch = max(1, min(int(args.batch_s / max(seconds + flush_s, 1e-7)), int(args.pool_gib * 2**30 / set_bytes), 10_000))
        print(f"{name} {dict(workload.axes)}: call {seconds * 1e6:.1f} us, flush {flush_s * 1e6:.1f} us, "
              f"inputs {set_bytes / 2**20:.2f} MiB, batch {batch}", flush=True)
        methods = steppers(function, make_inputs, flush, batch, torch.cuda.synchronize)
        for poll_s in args.poll:
            for method in args.methods:
                blank_step, call_step = methods[method]
                try:
                    row = {"problem": name, **measure_method(counter, blank_step, call_step, 1 if method == "per-step" else batch,
                                                             args.window, args.repeats, seconds, poll_s=poll_s), "method": method, "poll_s": poll_s}
                except CounterStuck as exc:
                    print(f"  {method}: {exc}", flush=True)
                    continue
                rows.append(row)
                median, cv = row["median_j"], row["cv"]
                poll = f"poll {poll_s * 1e3:g} ms " if poll_s else ""
                print(f"  {poll}{method:<9} {median * 1e3:10.4f} mJ/call  CV {cv:6.1%}  implied {row['implied_power_w']:7.0f} W  "
                      f"{row['steps_per_s']:8.1f} steps/s  blank {row['blank_step_j'] * 1e3:9.3f} mJ/step", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
