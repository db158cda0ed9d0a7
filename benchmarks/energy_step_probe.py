"""What one step of an energy window costs on the host, part by part (GPU; issue 32).

The energy windows of 2026-12-04 on the H200 ran about 230 steps a second for kernels of 2-20 us: each
step (fresh inputs, output allocation, L2 flush, synchronise) took about 4.5 ms, so the blank and the
calls' windows differed by a few per mille of their energy and small kernels' joules were noise
(CV 53% over 5 repeats). Timing's loop showed the same pace (20 iterations in 0.1-0.2 s). This
probe times each part of such a step, median of --repeats, on the bundled rmsnorm's smallest workload:

    python3 benchmarks/energy_step_probe.py [--repeats 200]

Prints one line per part: generate_inputs, the flusher as a whole and each of its three parts
(cudaCtxResetPersistingL2Cache, the 2 x L2 fill, the read of the clean buffer), a synchronise of an
idle GPU, one reading of NVML's energy counter, and a whole blank step as the worker makes it.

Then, with --poll (seconds between the poller's readings, e.g. 0 0.0005 0.005 0.02; 0: no poller), the
same steps while solbench.energy.window.CounterPoller reads the counter in its thread as it does during
a window (the 2026-12-06 H100 run of the energy method probe, since replaced by the worker's own method,
ran its steps 5-500x slower than this probe's blank step and read nonsense joules): per interval, the median blank step, call step (the
problem's reference, synchronised) and batch of --batch unsynchronised flush + call pairs, and the
counter's update period seen by the poller.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Callable


def _median_ms(action: Callable[[], object], repeats: int, synchronize: Callable[[], None]) -> float:
    times = []
    for _ in range(repeats):
        synchronize()
        began = time.perf_counter()
        action()
        synchronize()
        times.append((time.perf_counter() - began) * 1e3)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--problem", default="rmsnorm_llama3_8b")
    parser.add_argument("--poll", type=float, nargs="*", default=[], help="poller intervals in seconds to measure the steps under (0: none)")
    parser.add_argument("--batch", type=int, default=10, help="flush + call pairs of the unsynchronised batch")
    args = parser.parse_args()

    import torch

    from solbench.bench.timing import CacheFlusher
    from solbench.data.inputs import generate_inputs
    from solbench.data.loaders import load_problems
    from solbench.dataset import bundled_problems_path
    from solbench.energy.counter import open_counter

    if not torch.cuda.is_available():
        print("error: needs a CUDA GPU", file=sys.stderr)
        return 2
    problem = next(p for p in load_problems([bundled_problems_path()]) if p.name == args.problem)
    workload = min(problem.workloads, key=lambda w: sum(v for v in w.axes.values() if isinstance(v, int)))
    flusher, sync = CacheFlusher("cuda"), torch.cuda.synchronize
    counter, note = open_counter("cuda")
    trial = iter(range(10**9))
    parts: dict[str, Callable[[], object]] = {
        "generate_inputs": lambda: generate_inputs(problem, workload, seed=1, trial=next(trial), device="cuda"),
        "flusher (all)": flusher,
        "  reset persisting L2": flusher.reset_persisting or (lambda: None),
        "  fill 2 x L2": lambda: flusher.buffer.fill_(1),
        "  read clean buffer": lambda: flusher.clean.sum(),
        "synchronize (idle GPU)": lambda: None,
    }
    if counter is not None:
        parts["NVML energy reading"] = counter.read_mj
    parts["blank step (inputs, flush)"] = lambda: (generate_inputs(problem, workload, seed=1, trial=next(trial), device="cuda"), flusher())
    print(f"{torch.cuda.get_device_name()}, {problem.name} workload {workload.uuid[:8]} {dict(workload.axes)}, median of {args.repeats}"
          + ("" if counter is not None else f"; {note}"))
    for name, action in parts.items():
        action()  # warm
        print(f"  {name:<30} {_median_ms(action, args.repeats, sync):8.4f} ms", flush=True)
    if args.poll:
        _under_poller(problem, workload, flusher, sync, counter, args)
    return 0


def _under_poller(problem: object, workload: object, flusher: Callable[[], None], sync: Callable[[], None], counter: object,
                  args: argparse.Namespace) -> None:
    """The steps' medians while a CounterPoller reads the counter every interval of --poll."""
    from solbench.data.inputs import generate_inputs
    from solbench.data.reference import reference_module
    from solbench.energy.window import CounterPoller

    run = reference_module(problem.definition).run
    trial = iter(range(10**6, 10**9))
    inputs = lambda: list(generate_inputs(problem, workload, seed=1, trial=next(trial), device="cuda").values())  # noqa: E731
    pool = [inputs() for _ in range(args.batch)]

    def call_step() -> None:
        arguments = inputs()
        flusher()
        sync()
        run(*arguments)

    def batch() -> None:
        for arguments in pool:
            flusher()
            run(*arguments)

    steps = {"blank step": lambda: (inputs(), flusher()), "call step": call_step, f"batch of {args.batch}": batch}
    for interval in args.poll:
        if interval > 0 and counter is None:
            continue
        medians = {}
        poller = CounterPoller(counter, interval_s=interval) if interval > 0 else None
        began = time.monotonic()
        if poller:
            poller.__enter__()
        try:
            for name, action in steps.items():
                action()
                medians[name] = _median_ms(action, args.repeats, sync)
        finally:
            if poller:
                poller.__exit__(None, None, None)
        seconds = time.monotonic() - began
        period = ""
        if poller and len(poller.updates) > 2:
            gaps = [b[1] - a[1] for a, b in zip(poller.updates, poller.updates[1:])]
            period = f"; counter updated {len(poller.updates)} times in {seconds:.2f} s, median every {statistics.median(gaps) * 1e3:.1f} ms"
        label = f"poll every {interval * 1e3:g} ms" if interval > 0 else "no poller"
        print(f"  {label:<22} " + "  ".join(f"{name} {value:8.4f} ms" for name, value in medians.items()) + period, flush=True)


if __name__ == "__main__":
    sys.exit(main())
