"""A synthetic run summary with realistic numbers: for trying and timing the report without a GPU
run, and for its tests. Deterministic for a given seed.

Each problem gets 2-4 workloads priced on a real hardware spec (T_SOL = max(FLOPs / peak,
bytes / bandwidth)); the reference is 1.5-20x slower than T_SOL; T_b is the faster of the reference
and a compiled variant; every solution set has a solution per problem, some of which fail, and a
few problems have no T_SOL (so no score). Scores follow S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)).
"""

from __future__ import annotations

import math
import random
import statistics

from solbench.score.summary import AuditFinding, ProblemScore, RunSummary, SuiteScore, WorkloadScore

OP_TYPES = ("gemm", "attention", "norm", "elementwise", "moe", "conv", "reduction", "copy")
SUBSETS = ("L1", "L2", "Quant", "FlashInfer-Bench")
PRECISIONS = ("bf16", "fp16", "fp32", "fp8")
SOLUTION_SETS = ("agent-a", "agent-b")


def _roofs() -> dict[str, float]:
    from solbench.sol.hardware import get_hardware

    spec = get_hardware("H200")
    return {"dram_tbps": spec.dram.bandwidth_tbps, **{f"{unit}_tflops": value for unit, value in spec.peak_tflops.items()}}


def _work(op_type: str, rng: random.Random) -> tuple[float, float]:
    """(FLOPs, bytes) of one workload of an op type, over a realistic range of sizes."""
    size = 2 ** rng.uniform(20, 28)
    intensity = {"gemm": rng.uniform(50, 800), "attention": rng.uniform(20, 400), "conv": rng.uniform(10, 200), "moe": rng.uniform(5, 150),
                 "norm": rng.uniform(0.5, 3), "elementwise": rng.uniform(0.1, 1), "reduction": rng.uniform(0.25, 1), "copy": 0.0}[op_type]
    return size * intensity, size


def _score(latency: float | None, sol: float | None, baseline: float | None, correct: bool) -> float | None:
    if not correct:
        return 0.0
    if latency is None or sol is None or baseline is None or baseline <= sol:
        return None
    if latency < sol:
        return 0.0
    return 1.0 / (1.0 + (latency - sol) / (baseline - sol))


def _geomean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None and v > 0]
    return math.exp(sum(map(math.log, known)) / len(known)) if known else None


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _workloads(problem: str, op_type: str, roofs: dict[str, float], rng: random.Random, has_sol: bool) -> list[WorkloadScore]:
    peak = roofs["tensor_bf16_tflops"] if op_type in {"gemm", "attention", "conv", "moe"} else roofs["vector_fp32_tflops"]
    rows = []
    for index in range(rng.randint(2, 4)):
        flops, nbytes = _work(op_type, rng)
        sol = max(flops / (peak * 1e9), nbytes / (roofs["dram_tbps"] * 1e9)) if has_sol else None
        reference = (sol or nbytes / (roofs["dram_tbps"] * 1e9)) * rng.uniform(1.5, 20)
        compiled = reference * rng.uniform(0.5, 1.3)
        baseline, candidate = (compiled, "compile-default") if compiled < reference else (reference, "eager")
        uuid = f"{problem}-w{index}-{rng.getrandbits(32):08x}"
        common = {"problem": problem, "workload": uuid, "sol_ms": sol, "baseline_ms": baseline, "baseline_candidate": candidate,
                  "reference_ms": reference, "flops": flops, "bytes": nbytes}
        rows.append(WorkloadScore(solution=f"{problem}-reference", solution_set="reference", status="PASSED", latency_ms=reference,
                                  score=_score(reference, sol, baseline, True), speedup_vs_reference=1.0,
                                  speedup_vs_baseline=baseline / reference, **common))
        for set_name in SOLUTION_SETS:
            roll = rng.random()
            status = "PASSED" if roll > 0.1 else rng.choice(("RUNTIME_ERROR", "INCORRECT_NUMERICAL", "TIMEOUT"))
            latency = None
            flags: list[str] = []
            if status == "PASSED":
                floor = sol if sol is not None else baseline / 20
                latency = floor * (rng.uniform(0.9, 0.99) if roll > 0.985 else rng.uniform(1.05, 1.6) * baseline / floor if roll > 0.6 else rng.uniform(1.05, 4))
                if sol is not None and latency < sol:
                    flags.append("faster-than-sol")
            rows.append(WorkloadScore(solution=f"{set_name}-{problem}", solution_set=set_name, status=status, latency_ms=latency,
                                      score=_score(latency, sol, baseline, status == "PASSED"), flags=flags,
                                      speedup_vs_reference=reference / latency if latency else None,
                                      speedup_vs_baseline=baseline / latency if latency else None, **common))
    return rows


def _problem_scores(rows: list[WorkloadScore], categories: dict[str, str]) -> list[ProblemScore]:
    found = []
    for solution in dict.fromkeys(r.solution for r in rows):
        mine = [r for r in rows if r.solution == solution]
        statuses: dict[str, int] = {}
        for r in mine:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        ratios = [r.latency_ms / r.sol_ms for r in mine if r.status == "PASSED" and r.latency_ms and r.sol_ms]
        scores = [r.score for r in mine]
        found.append(ProblemScore(problem=mine[0].problem, solution=solution, solution_set=mine[0].solution_set, categories=categories,
                                  workloads=len(mine), statuses=statuses, score=None if all(s is None for s in scores) else _mean(scores),
                                  median_ratio_to_sol=statistics.median(ratios) if ratios else None,
                                  geomean_speedup_vs_reference=_geomean([r.speedup_vs_reference for r in mine]),
                                  geomean_speedup_vs_baseline=_geomean([r.speedup_vs_baseline for r in mine]),
                                  flags=sorted({f for r in mine for f in r.flags})))
    return found


def _suite(name: str, problems: list[ProblemScore], rows: list[WorkloadScore]) -> SuiteScore:
    scores = [p.score for p in problems if p.score is not None]
    by_category: dict[str, dict[str, list[float]]] = {}
    for p in problems:
        if p.score is not None:
            for key, value in p.categories.items():
                by_category.setdefault(key, {}).setdefault(value, []).append(p.score)
    correct = [r for r in rows if r.status == "PASSED" and r.speedup_vs_reference]
    return SuiteScore(solution=name, problems=len(problems), score_mean=_mean(scores), score_median=statistics.median(scores) if scores else None,
                      by_category={k: {v: sum(s) / len(s) for v, s in values.items()} for k, values in by_category.items()},
                      fast_p={f"{p:.1f}": sum(r.speedup_vs_reference > p for r in correct) / max(1, len(rows)) for p in (1.0, 1.5, 2.0)},
                      geomean_speedup_vs_reference=_geomean([p.geomean_speedup_vs_reference for p in problems]),
                      geomean_speedup_vs_baseline=_geomean([p.geomean_speedup_vs_baseline for p in problems]))


def sample_summary(problems: int = 12, seed: int = 0) -> RunSummary:
    """A RunSummary of `problems` synthetic problems, the reference and two solution sets each."""
    rng = random.Random(seed)
    roofs = _roofs()
    workloads: list[WorkloadScore] = []
    scores: list[ProblemScore] = []
    for index in range(problems):
        op_type = OP_TYPES[index % len(OP_TYPES)]
        name = f"{index:03d}_{op_type}_{rng.choice(('small', 'wide', 'deep', 'fused'))}"
        categories = {"subset": SUBSETS[index % len(SUBSETS)], "op_type": op_type, "precision": rng.choice(PRECISIONS),
                      "direction": "backward" if index % 7 == 3 else "forward"}
        rows = _workloads(name, op_type, roofs, rng, has_sol=index % 11 != 5)
        workloads += rows
        scores += _problem_scores(rows, categories)
    suites = [_suite(set_name, [p for p in scores if p.solution_set == set_name], [r for r in workloads if r.solution_set == set_name])
              for set_name in ("reference", *SOLUTION_SETS)]
    best = [max((p for p in scores if p.problem == problem and p.solution_set != "reference"), key=lambda p: p.score or -1.0)
            for problem in dict.fromkeys(p.problem for p in scores)]
    suites.append(_suite("best-of-k", best, [r for r in workloads if r.solution in {p.solution for p in best}]))
    audit = [AuditFinding(solution=f"agent-a-{scores[0].problem}", rule="precision-downgrade", severity="warn", file="kernel.py", line=42,
                          message="fp32 matmul run as bf16 <under relaxed policy>"),
             AuditFinding(solution=f"agent-b-{scores[-1].problem}", rule="timing-hook", severity="reject", file="solution.py", line=7,
                          message="patches torch.cuda.Event.elapsed_time")]
    return RunSummary(created="2026-12-01T12:00:00+00:00", hardware="H200", device="cuda:0",
                      versions={"solbench": "0.1.0", "torch": "2.13.0", "triton": "3.9.0", "cuda": "12.8", "driver": "570.86"},
                      roofs=roofs, wall_s=1234.5, workloads=workloads, problems=scores, suites=suites, audit=audit,
                      notes=["synthetic summary (solbench.report.sample): numbers are made up",
                             "T_SOL blank for some workloads: their SOL analysis failed on H200 (see the traces' logs)"])
