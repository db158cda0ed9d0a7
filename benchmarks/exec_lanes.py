"""Wall time of evaluating the bundled problems' references on 1, 2, ... lanes of the local pool.

A CPU-bound mix by default: each job is a problem's reference on its smallest workload(s), for
the ten bundled problems whose job takes about the same time on a CPU (10-15 s on 2 cores; the
embedding, fp8 GEMM and SwiGLU MLP ones take 3-10x longer and would bound the wall time alone),
correctness only (timing on a CPU spends a fixed time budget per workload, which lanes overlap
trivially). With 10 jobs the last one alone bounds the wall time of 2 lanes by ~1/10 of it:
`--copies N` queues every job N times (a dataset N times the size with the same cost per job). Prints the CPU time the lanes spent (about 1 core busy per lane shows the mix is CPU-bound,
so N free cores give close to N times the speed) and the load of the machine before and after (`uptime`): on a shared machine the
figures are only as good as the cores that were free. The statuses must be the same on every
lane count; the speed-up is relative to the first lane count.

    python benchmarks/exec_lanes.py [--lanes 1,2] [--problems NAME,...|all] [--workloads smallest:1] [--trials 3] [--device cpu]
                                    [--threads-per-lane N] [--copies N] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

EVEN_MIX = ("fused_add_rmsnorm_llama3_8b", "gemm_bf16_llama3_8b_o_proj", "gemm_bf16_llama3_8b_qkv_proj", "gqa_decode_llama3_8b",
            "layernorm_backward_gpt2_medium", "moe_topk_router_mixtral_8x7b", "rmsnorm_llama3_8b", "rope_llama3_8b", "silu_and_mul_llama3_8b",
            "softmax_vit_large_attention")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", default="1,2", help="lane counts to compare, e.g. 1,2 (GPU lanes on a GPU device)")
    parser.add_argument("--problems", default=",".join(EVEN_MIX), help="bundled problems by name, comma-separated, or all")
    parser.add_argument("--workloads", default="smallest:1", help="all, smallest:N or spread:N")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timing", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument("--threads-per-lane", type=int, default=None,
                        help="torch's intra-op threads in every lane (OMP/MKL_NUM_THREADS) for every lane count, so that the "
                             "figure compares lanes, not threads (default: the cores shared out, all of them for one lane)")
    parser.add_argument("--copies", type=int, default=1, help="queue every job this many times")
    parser.add_argument("--repeats", type=int, default=1, help="rounds over the lane counts (medians are compared)")
    args = parser.parse_args()
    if args.threads_per_lane is not None:
        import os

        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # the pool's CPU lanes take these over (exec.lanes.plan_lanes)
            os.environ[name] = str(args.threads_per_lane)

    from solbench.bench.orchestrator import EvalOptions, reference_solution
    from solbench.data.loaders import load_problems
    from solbench.data.selection import choose_workloads
    from solbench.exec import Job, evaluate_jobs, parse_lanes

    counts = [parse_lanes(part) for part in args.lanes.split(",")]
    problems = sorted(load_problems([_bundled()]), key=lambda problem: problem.name)
    if args.problems != "all":
        wanted = args.problems.split(",")
        unknown = sorted(set(wanted) - {problem.name for problem in problems})
        if unknown:
            raise SystemExit(f"--problems: no bundled problem named {', '.join(unknown)}")
        problems = [problem for problem in problems if problem.name in wanted]
    jobs = [Job(problem, reference_solution(problem), choose_workloads(problem, args.workloads)) for problem in problems] * max(1, args.copies)
    options = EvalOptions(device=args.device, trials=args.trials, timing=args.timing, hidden=0, seed=11, static_analysis=False)
    threads = f"{args.threads_per_lane} thread(s) per lane" if args.threads_per_lane else "the cores shared out among the lanes"
    print(f"{len(jobs)} jobs, {sum(len(job.workloads or []) for job in jobs)} workloads; {threads}; {_uptime()}")
    results = []
    for round_ in range(max(1, args.repeats)):  # lane counts alternate, so that a noisy spell of a shared machine hits them alike
        for count in counts:
            started, cpu_before = time.perf_counter(), _children_cpu_s()
            traces = evaluate_jobs(jobs, options, executor="pool", lanes=count)
            wall, cpu = time.perf_counter() - started, _children_cpu_s() - cpu_before
            statuses = [trace.evaluation.status.value for trace in traces]
            results.append({"lanes": count, "round": round_, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "statuses": statuses})
            print(f"round {round_ + 1}, {count} lane(s): {wall:.1f} s wall, {cpu:.1f} s CPU of the lanes and their workers "
                  f"({cpu / wall:.2f} cores busy), {statuses.count('PASSED')} of {len(statuses)} PASSED; {_uptime()}")
    medians = {count: statistics.median(r["wall_s"] for r in results if r["lanes"] == count) for count in counts}
    same = all(r["statuses"] == results[0]["statuses"] for r in results)
    for count in counts[1:]:
        print(f"speed-up {counts[0]} -> {count} lanes: {medians[counts[0]] / medians[count]:.2f}x (median wall {medians[counts[0]]:.1f} s "
              f"-> {medians[count]:.1f} s over {max(1, args.repeats)} round(s))")
    print(f"statuses identical on every lane count and round: {same}")
    print(json.dumps({"benchmark": "exec_lanes", "jobs": len(jobs), "median_wall_s": medians,
                      "results": [{k: v for k, v in r.items() if k != "statuses"} for r in results]}))

def _bundled() -> object:
    from pathlib import Path

    import solbench.dataset

    return Path(solbench.dataset.__file__).parent / "problems"


def _children_cpu_s() -> float:
    """CPU time of the finished child processes (the lanes, which waited for their workers)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
