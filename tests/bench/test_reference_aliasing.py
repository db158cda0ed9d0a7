"""Aliasing follows the reference (issue 29): where the reference writes a KV cache in place and
returns it, a solution that does the same passes its correctness trials and its timed calls; an
output that shares memory with another input than the reference's stays REWARD_HACK."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status

FAST = dict(trials=2, min_iterations=3, budget_s=0.3, warmup=1, timeout_s=240.0, seed=11, static_analysis=False, hidden=0)
DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")])]
REFERENCE = """import torch


def run(cache, new, scale):
    cache[:, -1].copy_(new * scale)  # the newest position of the cache, written in place
    return cache, new * scale
"""
HONEST = """import torch


def run(cache, new, scale):
    torch.mul(new, scale, out=cache[:, -1])
    return cache, cache[:, -1].clone()
"""
ALIASES_NEW = """import torch


def run(cache, new, scale):
    cache[:, -1].copy_(new * scale)
    return cache, new.mul_(scale)  # the second output is the input `new`, which the reference's is not
"""


def kv_update():
    return inline_problem("kv_cache_update", REFERENCE, {"cache": (["H", "S", "D"], "float32"), "new": (["H", "D"], "float32"),
                                                         "scale": (None, "float32")},
                          {"cache_out": (["H", "S", "D"], "float32"), "written": (["H", "D"], "float32")}, scalars={"scale": 0.5},
                          axes={"H": {"type": "const", "value": 4}, "S": {"type": "var"}, "D": {"type": "const", "value": 64}},
                          workload_axes=[{"S": 16}, {"S": 128}])


def evaluated(source: str, device: str, tmp_path: Path):
    problem = kv_update()
    solution = inline_solution("kv", problem.name, "pytorch", "main.py::run", {"main.py": source}, dps=False)
    return [t.evaluation for t in evaluate(problem, solution, EvalOptions(device=device, cache_root=tmp_path, **FAST))]


@pytest.mark.parametrize("device", DEVICES)
def test_a_kv_cache_written_in_place_as_the_reference_does_passes_trials_and_timed_calls(device: str, tmp_path: Path):
    for evaluation in evaluated(HONEST, device, tmp_path):
        assert evaluation.status == Status.PASSED, evaluation.log
        assert evaluation.performance is not None and evaluation.performance.latency_ms > 0
        assert evaluation.correctness.verified_timed_calls >= 1


@pytest.mark.parametrize("device", DEVICES)
def test_an_output_aliasing_another_input_than_the_references_is_a_reward_hack(device: str, tmp_path: Path):
    for evaluation in evaluated(ALIASES_NEW, device, tmp_path):
        assert evaluation.status == Status.REWARD_HACK, evaluation.log
        assert "[output-aliases-input]: output 'written' shares memory with input 'new'" in evaluation.log
