"""The bundled set solbench:models (src/solbench/dataset/models/, made by dataset/bundle.py): it loads and
validates, covers what the set promises, and every reference passes against itself at its smallest
workload on the CPU through the real evaluator (correctness only: the timing is the GPU's business)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from solbench.bench.orchestrator import EvalOptions, reference_solution
from solbench.data.loaders import load_problems
from solbench.data.selection import choose_workloads
from solbench.data.trace import Status
from solbench.dataset import bundled_set_path
from solbench.dataset.catalog.rules import category_of
from solbench.exec import Job, evaluate_jobs

SET = bundled_set_path("models")


@pytest.fixture(scope="module")
def problems():
    return load_problems([SET])


def test_the_set_has_what_it_promises(problems) -> None:
    assert len(problems) >= 120
    categories = Counter(category_of(p.definition.op_type, p.name, None)[0] for p in problems)  # as `solbench dataset stats` counts
    attention, moe = categories["attention"], categories["moe"]
    backward = sum(1 for p in problems if p.name.endswith("_backward"))
    assert attention >= 0.30 * len(problems) and moe >= 0.12 * len(problems) and backward >= 0.20 * len(problems), (attention, moe, backward)
    dtypes = Counter(next(iter(p.definition.inputs.values())).dtype.value for p in problems)
    assert {"bfloat16", "float32", "float16", "float8_e4m3fn", "float4_e2m1fn_x2"} <= set(dtypes), dtypes
    assert (SET / "MANIFEST.md").read_text().count("| `solbench dataset extract") >= 15


SHARES = 12  # the set in this many tests, so that the test processes (pytest-xdist) share its minutes of CPU
# Seconds each problem's self-check took (benchmarks/self_check_cost.py --write-balance): the shares are made of
# equal cost, longest first, so that no share holds back the end of the suite; a problem not listed counts the median.
SECONDS = json.loads((Path(__file__).with_name("models_self_check_seconds.json")).read_text())


def shares_of_equal_cost(problems: list, count: int) -> list[list]:
    known = sorted(SECONDS.values())
    default = known[len(known) // 2] if known else 1.0
    cost = {problem.name: SECONDS.get(problem.name, default) for problem in problems}
    loads, shares = [0.0] * count, [[] for _ in range(count)]
    for problem in sorted(problems, key=lambda problem: (-cost[problem.name], problem.name)):
        lightest = loads.index(min(loads))
        shares[lightest].append(problem)
        loads[lightest] += cost[problem.name]
    return shares


def test_the_shares_hold_every_problem_once(problems) -> None:
    shares = shares_of_equal_cost(problems, SHARES)
    assert sorted(p.name for share in shares for p in share) == sorted(p.name for p in problems)
    assert len(SECONDS) >= 0.9 * len(problems), "models_self_check_seconds.json is stale: run benchmarks/self_check_cost.py --write-balance"


@pytest.mark.parametrize("share", range(SHARES))
def test_every_reference_passes_against_itself_at_its_smallest_workload_on_the_cpu(problems, share: int) -> None:
    mine = shares_of_equal_cost(problems, SHARES)[share]
    jobs = [Job(problem, reference_solution(problem), choose_workloads(problem, "smallest:1"), trusted=True) for problem in mine]
    options = EvalOptions(device="cpu", trials=1, timing=False, hidden=0, seed=5, static_analysis=False)
    traces = evaluate_jobs(jobs, options)
    failed = [(t.definition, t.evaluation.status.value, t.evaluation.log[:200]) for t in traces if t.evaluation.status != Status.PASSED]
    assert len(traces) == len(mine) and not failed, failed


def test_every_router_spreads_its_tokens_over_the_experts_as_a_trained_model_does(problems) -> None:
    """The generated inputs must route like a load-balanced model: were one expert's share far above
    1/experts (a score-correction bias as large as the scores did this), a kernel could skip most
    experts' weights and the grouped GEMMs' bound, which reads every reachable expert, would be wrong."""
    import torch

    from solbench.data.inputs import generate_inputs
    from solbench.data.reference import reference_module

    routers = [p for p in problems if p.name.endswith("_moe_router")]
    assert len(routers) >= 5
    for problem in routers:
        workload = choose_workloads(problem, "smallest:1")[0]
        inputs = generate_inputs(problem, workload, seed=3, device="cpu")
        weights, indices = reference_module(problem.definition).run(**inputs)
        experts = next(t.shape[0] for name, t in inputs.items() if name != "hidden_states" and t.dim() == 2)  # the gate's [experts, hidden]
        counts = torch.bincount(indices.flatten(), minlength=experts)
        picks = int(counts.sum())
        assert (counts > 0).sum() >= 0.75 * min(experts, picks), (problem.name, counts.tolist())
        assert counts.max() <= 4 * picks / experts + 2, (problem.name, counts.max().item(), picks, experts)
