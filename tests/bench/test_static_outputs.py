"""Each call's outputs are read before the next call (issue 29): a solution that writes every call's
result into one static buffer (as a replayed CUDA graph does) passes, on the CPU with a plain
persistent buffer and on a GPU with a hand-captured torch.cuda.CUDAGraph and with
torch.compile(mode="reduce-overhead"); a solution that hands back the previous call's result without
computing it stays REWARD_HACK."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status

FAST = dict(trials=2, min_iterations=3, budget_s=0.3, warmup=1, timeout_s=300.0, seed=5, static_analysis=False, hidden=0)
gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

STATIC_BUFFER = '''import torch

_out = {}


def run(x, alpha):
    key = (tuple(x.shape), x.device)
    if key not in _out:
        _out[key] = torch.empty_like(x)
    torch.mul(x, alpha, out=_out[key])  # written again on every call
    return _out[key]
'''
CACHED = '''import torch

_seen = {}


def run(x, alpha):
    key = tuple(x.shape)
    if key not in _seen:
        _seen[key] = x * alpha
    return _seen[key]  # the first result, whatever the inputs now are
'''
CUDA_GRAPH = '''import torch

_graphs = {}


def run(x, alpha):
    key = tuple(x.shape)
    if key not in _graphs:
        static_x = torch.empty_like(x)
        static_x.copy_(x)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            static_y = static_x * alpha  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = static_x * alpha
        _graphs[key] = (graph, static_x, static_y)
    graph, static_x, static_y = _graphs[key]
    static_x.copy_(x)
    graph.replay()
    return static_y
'''
REDUCE_OVERHEAD = '''import torch


def _scale(x, alpha):
    return x * alpha


_compiled = torch.compile(_scale, mode="reduce-overhead", dynamic=False)


def run(x, alpha):
    return _compiled(x, alpha)
'''


def vector_scale():
    return inline_problem("vector_scale_static", "import torch\n\n\ndef run(x, alpha):\n    return x * alpha\n",
                          {"x": (["N"], "float32"), "alpha": (None, "float32")}, {"y": (["N"], "float32")},
                          scalars={"alpha": 3.0}, axes={"N": {"type": "var"}}, workload_axes=[{"N": 4096}, {"N": 65_536}],
                          tolerance={"max_atol": 1e-5, "max_rtol": 1e-5, "required_matched_ratio": 1.0})


def statuses(source: str, device: str, tmp_path: Path) -> list[tuple[Status, str]]:
    problem = vector_scale()
    solution = inline_solution("static", problem.name, "pytorch", "main.py::run", {"main.py": source}, dps=False)
    traces = evaluate(problem, solution, EvalOptions(device=device, cache_root=tmp_path, **FAST))
    assert len(traces) == 2
    return [(t.evaluation.status, t.evaluation.log) for t in traces]


def test_one_static_output_buffer_written_by_every_call_passes(tmp_path: Path):
    for status, log in statuses(STATIC_BUFFER, "cpu", tmp_path):
        assert status == Status.PASSED, log


def test_the_previous_calls_result_handed_back_stays_a_reward_hack(tmp_path: Path):
    for status, log in statuses(CACHED, "cpu", tmp_path):
        assert status == Status.REWARD_HACK, log
        assert "output-reused" in log and "without being written" in log


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("source", [CUDA_GRAPH, REDUCE_OVERHEAD], ids=["cuda-graph", "reduce-overhead"])
def test_cuda_graph_solutions_pass_on_a_gpu(source: str, tmp_path: Path):
    for status, log in statuses(source, "cuda", tmp_path):
        assert status == Status.PASSED, log


@pytest.mark.gpu
@gpu
def test_the_cached_result_is_caught_on_a_gpu(tmp_path: Path):
    for status, log in statuses(CACHED, "cuda", tmp_path):
        assert status == Status.REWARD_HACK, log


def test_trusted_code_is_called_once_per_trial(tmp_path: Path):
    """The repeated first call is a check on submitted code; a trusted job (a reference, a baseline
    candidate) is not repeated: the same cached result is then only wrong on the second trial's inputs."""
    from solbench.exec import Job, evaluate_jobs

    problem = vector_scale()
    solution = inline_solution("static", problem.name, "pytorch", "main.py::run", {"main.py": CACHED}, dps=False)
    traces = evaluate_jobs([Job(problem, solution, problem.workloads[:1], trusted=True)], EvalOptions(device="cpu", cache_root=tmp_path, **FAST))
    (trace,) = traces
    assert trace.evaluation.status == Status.INCORRECT_NUMERICAL, trace.evaluation.log
    assert trace.evaluation.log.startswith("trial 2/2: ") and "output-reused" not in trace.evaluation.log
