"""The fake-tensor dispatch cache: off in symbolic captures (it costs more than it saves there),
emptied after each problem's concrete captures; neither may change a bound."""

from __future__ import annotations

import json
from pathlib import Path

from solbench.sol.analysis import decomposition_for
from solbench.sol.api import analyze_problem_workloads, iter_analyses
from solbench.sol.capture import Captures
from solbench.sol.hardware import get_hardware
from solbench.sol.loops import signature
from solbench.sol.pricing import graph_totals
from solbench.sol.symbolic import capture_symbolic
from solbench.data.loaders import load_problems

H200 = get_hardware("H200")

# a loop over chunks of the sequence (pins seq), a branch on sizes (a guard) and a backward pass
SCAN = """import torch

def run(x, w):
    x = x.detach().requires_grad_(True)
    chunks = x.shape[1] // 4
    h = torch.zeros_like(x[:, 0])
    outs = []
    for i in range(chunks):
        h = torch.tanh(h @ w + x[:, 4 * i])
        outs.append(h)
    y = torch.stack(outs, 1)
    if x.shape[0] > 3:
        y = y * 2
    return torch.autograd.grad(y.sum(), x)[0]
"""


def write_problem(folder: Path, reference: str, inputs: dict, outputs: dict, axes: dict, workloads: list[dict]) -> Path:
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(json.dumps({"name": folder.name, "axes": axes, "inputs": inputs, "outputs": outputs,
                                                        "reference": reference}))
    (folder / "workload.jsonl").write_text("".join(json.dumps({"uuid": f"w{i}", **w}) + "\n" for i, w in enumerate(workloads)))
    return folder


def scan_problem(tmp_path: Path, sizes: list[tuple[int, int]], name: str = "scan"):
    folder = write_problem(tmp_path / name, SCAN, {"x": {"shape": ["B", "S", "H"], "dtype": "float32"}, "w": {"shape": ["H", "H"], "dtype": "float32"}},
                           {"dx": {"shape": ["B", "S", "H"], "dtype": "float32"}},
                           {"B": {"type": "var"}, "S": {"type": "var"}, "H": {"type": "const", "value": 16}},
                           [{"axes": {"B": b, "S": s}, "inputs": {"x": {"type": "random"}, "w": {"type": "random"}}} for b, s in sizes])
    (problem,) = load_problems([folder])
    return problem


def test_a_symbolic_capture_is_the_same_with_and_without_the_dispatch_cache(tmp_path):
    problem = scan_problem(tmp_path, [(5, 12)])
    workload = problem.workloads[0]
    cached = capture_symbolic(problem, workload, decomposition_for, fake_cache=True)
    plain = capture_symbolic(problem, workload, decomposition_for)
    assert [str(g) for g in plain.guards] == [str(g) for g in cached.guards]
    assert plain.pins_axes == cached.pins_axes == ["S"]
    assert len(plain.graph.nodes) > 20
    for b in (4, 5, 9):  # every batch the guards allow (B > 3): the same graph and the same totals
        axes = {**problem.axes(workload), "B": b}
        assert plain.fits(axes) and cached.fits(axes)
        a, c = plain.concretize(axes), cached.concretize(axes)
        assert signature(a) == signature(c)
        totals_a, totals_c = graph_totals(a, H200, "relaxed"), graph_totals(c, H200, "relaxed")
        assert totals_a.flops == totals_c.flops and totals_a.flops["vector_fp32"] > 0
        assert (totals_a.bytes_unfused, totals_a.bytes_read, totals_a.bytes_written, totals_a.surplus) == \
            (totals_c.bytes_unfused, totals_c.bytes_read, totals_c.bytes_written, totals_c.surplus)
    assert not plain.fits({**problem.axes(workload), "B": 3})  # the branch is a guard either way
    assert not cached.fits({**problem.axes(workload), "B": 3})


MOE = """import torch

def run(x, ids, w):
    ids = ids.abs() % w.shape[0]
    out = torch.zeros_like(x)
    for expert, count in enumerate(torch.bincount(ids.flatten(), minlength=w.shape[0]).tolist()):
        if count:
            rows = (ids == expert).nonzero()[:, 0]
            out.index_add_(0, rows, x[rows] @ w[expert])
    return out
"""


def moe_problem(tmp_path: Path):
    folder = write_problem(tmp_path / "moe", MOE, {"x": {"shape": ["T", "H"], "dtype": "float32"}, "ids": {"shape": ["T", 2], "dtype": "int64"},
                                                   "w": {"shape": [4, "H", "H"], "dtype": "float32"}},
                           {"y": {"shape": ["T", "H"], "dtype": "float32"}}, {"T": {"type": "var"}, "H": {"type": "const", "value": 8}},
                           [{"axes": {"T": t}, "inputs": {"x": {"type": "random"}, "ids": {"type": "random"},
                                                          "w": {"type": "random"}}} for t in (3, 7, 12)])
    (problem,) = load_problems([folder])
    return problem


def test_a_problem_leaves_no_fake_dispatch_cache_behind(tmp_path):
    from torch._subclasses.fake_tensor import FakeTensorMode

    problem = moe_problem(tmp_path)
    results = analyze_problem_workloads((problem, list(problem.workloads), H200, "auto", False))
    assert [r.workload for r in results] == ["w0", "w1", "w2"]
    assert all(r.flops > 0 and not r.uncovered_ops for r in results)

    assert FakeTensorMode.cache == {}  # emptied: a worker that analyses many problems does not grow with them
    again = analyze_problem_workloads((problem, list(problem.workloads), H200, "auto", False))
    assert [r.to_json() for r in again] == [r.to_json() for r in results]  # and what it held never changed a bound


def test_worker_processes_give_the_results_of_one_process(tmp_path):
    for name, body in (("scale_a", "x * 2"), ("scale_b", "torch.exp(x)"), ("scale_c", "x.sum(-1)")):
        write_problem(tmp_path / name, f"import torch\n\ndef run(x):\n    return {body}\n", {"x": {"shape": ["M", 8], "dtype": "float32"}},
                      {"y": {"shape": ["M", 8] if "sum" not in body else ["M"], "dtype": "float32"}}, {"M": {"type": "var"}},
                      [{"axes": {"M": m}, "inputs": {"x": {"type": "random"}}} for m in (4, 64)])
    alone = [r.to_json() for r in iter_analyses([tmp_path], H200, jobs=1)]
    pooled = [r.to_json() for r in iter_analyses([tmp_path], H200, jobs=2)]
    assert [r["problem"] for r in alone] == ["scale_a", "scale_a", "scale_b", "scale_b", "scale_c", "scale_c"]
    assert alone[1]["bytes_fused"] == 64 * 8 * 4 * 2
    assert pooled == alone


# a causal mask made from the sizes feeds the scores: a symbolic capture cannot stand for the workloads
MASKED = """import torch

def run(q, k):
    s = q @ k.transpose(-1, -2)
    n = q.shape[-2]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    s = s.masked_fill(mask, float("-inf"))
    for _ in range(20):
        s = torch.tanh(s) * 2.0
    return torch.softmax(s, -1)
"""


def test_a_symbolic_capture_that_needs_values_stops_where_that_is_known_and_the_workloads_are_captured_with_them(tmp_path):
    """The capture ends at the masked_fill (the ops after it are never recorded: a cost the analysis
    would throw away) and says why; every workload is then captured on its own, with the mask's values."""
    folder = write_problem(tmp_path / "masked", MASKED, {"q": {"shape": ["S", "D"], "dtype": "float32"}, "k": {"shape": ["S", "D"], "dtype": "float32"}},
                           {"p": {"shape": ["S", "S"], "dtype": "float32"}}, {"S": {"type": "var"}, "D": {"type": "const", "value": 8}},
                           [{"axes": {"S": s}, "inputs": {"q": {"type": "random"}, "k": {"type": "random"}}} for s in (16, 32)])
    (problem,) = load_problems([folder])
    made = capture_symbolic(problem, problem.workloads[0], decomposition_for)
    assert made.needs_values == "a mask-like constant of symbolic size feeds the computation: its values are needed"
    assert made.graph.nodes == []  # stopped there: none of the 40 pointwise ops after the mask was captured
    captures = Captures(problem, decomposition_for)
    for workload in problem.workloads:
        graph = captures.graph(workload)
        assert graph.mode == "fake" and sum(node.packet == "tanh" for node in graph.nodes) == 20
    assert captures.concrete_only == made.needs_values and captures.captured == 3  # one symbolic try, then one capture per workload
