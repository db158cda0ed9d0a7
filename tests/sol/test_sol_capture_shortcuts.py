"""Shortcuts that make the analysis of a dataset faster (issue 28, item 7) and must never change a
bound: each is compared here with the long way it replaces, on real captures, value by value."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import torch
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils._python_dispatch import TorchDispatchMode

from solbench.sol import recorder
from solbench.sol.analysis import analyze, decomposition_for
from solbench.sol.api import analyze_problem_workloads
from solbench.sol.capture import Captures, capture_concrete
from solbench.sol.graph import TensorInfo
from solbench.sol.hardware import get_hardware
from solbench.sol.trees import leaves, map_leaves, tensor_leaves
from solbench.data.loaders import load_problems

H200 = get_hardware("H200")


def write_problem(folder: Path, reference: str, inputs: dict, outputs: dict, axes: dict, workloads: list[dict]):
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(json.dumps({"name": folder.name, "axes": axes, "inputs": inputs, "outputs": outputs,
                                                        "reference": reference}))
    (folder / "workload.jsonl").write_text("".join(json.dumps({"uuid": f"w{i}", **w}) + "\n" for i, w in enumerate(workloads)))
    (problem,) = load_problems([folder])
    return problem


def graph_facts(graph) -> list[tuple]:
    """Everything of a graph that pricing reads, tensors by their recorded fields (storages by identity pattern)."""
    storages: dict[int, int] = {}

    def values(t) -> Any:  # a constant's real values, byte for byte
        return None if t.values is None else (t.values.dtype, tuple(t.values.shape),
                                              t.values.reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())

    def tensor(t) -> tuple:
        return (t.id, t.shape, t.stride, t.dtype, t.element_bits, storages.setdefault(t.storage, len(storages)), t.storage_offset,
                t.storage_bytes, t.role, t.name, t.value_format, t.constant, values(t), t.independent, t.nonzero)

    def argument(value: Any) -> Any:
        return tensor(value) if isinstance(value, TensorInfo) else value

    return [(n.index, n.op, [tensor(t) for t in n.inputs], [tensor(t) for t in n.outputs], tree_map(argument, n.args),
             tree_map(argument, n.kwargs), n.is_view, [tensor(t) for t in n.mutated], n.decomposed_from) for n in graph.nodes]


# --- the pytree walks ---------------------------------------------------------------------------------


class Pair(NamedTuple):
    first: Any
    second: Any


def same_tree(made: Any, expected: Any) -> None:
    """The same structure (container types included) and the same leaves, object for object."""
    made_leaves, made_spec = tree_flatten(made)
    expected_leaves, expected_spec = tree_flatten(expected)
    assert made_spec == expected_spec
    assert len(made_leaves) == len(expected_leaves) and all(a is b or (a == b and type(a) is type(b))
                                                            for a, b in zip(made_leaves, expected_leaves))


TREES = [
    (),
    None,
    3,
    torch.ones(2),
    (torch.ones(2), 3, [torch.zeros(1), None, (1.5, "mean")], {"dim": 1, "keepdim": True}),
    {"b": torch.ones(1), "a": [torch.ones(2), torch.Size([2, 3])], "c": {"nested": (torch.float32, torch.device("cpu"))}},
    [torch.Size([4, 5]), Pair(torch.ones(3), [2, Pair(None, torch.zeros(2))]), slice(1, 4)],
    collections.OrderedDict([("z", torch.ones(1)), ("y", (2, 3))]),
    (collections.defaultdict(list, {"k": [torch.ones(1)]}), collections.deque([1, torch.ones(1)])),
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_the_pytree_walks_give_torchs_own_results(tree):
    found = leaves(tree)
    expected = tree_flatten(tree)[0]
    assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected))
    assert [id(t) for t in tensor_leaves(tree)] == [id(leaf) for leaf in expected if isinstance(leaf, torch.Tensor)]
    tag = lambda leaf: ("tensor", tuple(leaf.shape)) if isinstance(leaf, torch.Tensor) else leaf  # noqa: E731
    same_tree(map_leaves(tag, tree), tree_map(tag, tree))


class ArgumentCheck(TorchDispatchMode):
    """Checks, on the arguments and results of every op a real reference runs, that the walks equal pytree's."""

    def __init__(self):
        super().__init__()
        self.checked = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        for tree in ((args, kwargs), args, kwargs):
            expected = tree_flatten(tree)[0]
            assert len(leaves(tree)) == len(expected) and all(a is b for a, b in zip(leaves(tree), expected))
            same_tree(map_leaves(lambda leaf: leaf, tree), tree_map(lambda leaf: leaf, tree))
        result = func(*args, **kwargs)
        assert [id(t) for t in tensor_leaves(result)] == [id(t) for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
        self.checked += 1
        return result


def test_the_pytree_walks_equal_pytree_on_the_arguments_of_real_ops():
    x = torch.randn(6, 8, requires_grad=True)
    ids = torch.tensor([[0, 2], [1, 2], [3, 0], [2, 1], [0, 1], [3, 2]])
    with ArgumentCheck() as check:
        y = torch.nn.functional.layer_norm(x, (8,)) @ torch.randn(8, 8)
        y = y.unflatten(-1, (2, 4)).permute(2, 0, 1).softmax(-1).flatten(1)
        counts = torch.bincount(ids.flatten(), minlength=4)
        parts = torch.split(y, [6, 6], dim=1)  # y is (4, 12)
        out = torch.zeros(6, 4).index_add_(0, ids[:4, 0], torch.cat(parts, 1)[:, :4] * counts.float())
        torch.autograd.grad(out.sum() + torch.max(y, dim=0).values.sum(), x)
    assert check.checked > 40


# --- real runs of ops whose shadows could not be kept ---------------------------------------------

# A decode loop over requests, as paged attention is: each request builds a mask (a constant of real
# values), and an in-place update of an integer tensor feeds a data-dependent loop bound afterwards.
MASKS = """import torch

def run(q, lengths):
    out = torch.zeros_like(q)
    lengths = lengths.abs() % 64 + 1
    for b in range(q.shape[0]):
        n = int(lengths[b])
        mask = torch.triu(torch.ones(n, 4096, dtype=torch.bool), 1)
        scores = (q[b] * 2.0).unsqueeze(0).expand(n, -1)
        out[b] = scores.masked_fill(mask[:, :q.shape[1]], 0.0).sum(0)
        lengths.add_(1)
    steps = int(lengths.sum())
    return out * steps
"""


BUDGET = 1 << 20  # shadow bytes in these tests: a mask of n rows takes n * 4 KiB, its detached view and its triu as much again


def mask_problem(tmp_path: Path):
    return write_problem(tmp_path / "masks", MASKS, {"q": {"shape": ["B", 4096], "dtype": "float32"}, "lengths": {"shape": ["B"], "dtype": "int64"}},
                         {"y": {"shape": ["B", 4096], "dtype": "float32"}}, {"B": {"type": "var"}},
                         [{"axes": {"B": b}, "inputs": {"q": {"type": "random"}, "lengths": {"type": "random"}}} for b in (6, 24)])


def test_ops_whose_shadows_cannot_be_kept_are_not_run_and_the_graphs_are_the_same(tmp_path, monkeypatch):
    """Once the shadow budget is spent, a pure op's real run would be thrown away: it is left out. The
    graph (every recorded field, constants' values known or not), and so every bound, is the one of the
    capture that runs them; the in-place update of the lengths (not pure) still runs, so the values
    read from them afterwards are the same."""
    monkeypatch.setattr(recorder, "SHADOW_BYTES", BUDGET)  # spent after a request's mask or two
    problem = mask_problem(tmp_path)
    for workload in problem.workloads:
        short = capture_concrete(problem, workload, decomposition_for)
        monkeypatch.setattr(recorder, "SKIP_UNKEPT_SHADOWS", False)
        long = capture_concrete(problem, workload, decomposition_for)
        monkeypatch.setattr(recorder, "SKIP_UNKEPT_SHADOWS", True)
        assert graph_facts(short) == graph_facts(long)
        assert short.data_dependent == long.data_dependent and short.notes == long.notes
        assert sum(node.packet == "triu" for node in short.nodes) == workload.axes["B"]
        masks = [t for node in short.nodes for t in node.outputs if node.packet == "triu"]
        assert masks[0].values is not None and masks[-1].values is None  # the budget ran out on the way

    short_rows = analyze_problem_workloads((problem, list(problem.workloads), H200, "auto", False))
    monkeypatch.setattr(recorder, "SKIP_UNKEPT_SHADOWS", False)
    long_rows = analyze_problem_workloads((problem, list(problem.workloads), H200, "auto", False))
    assert [r.to_json() for r in short_rows] == [r.to_json() for r in long_rows]
    assert all(r.flops > 0 and r.bytes_fused > 0 for r in short_rows)


def run_recorded(problem, workload) -> recorder.Recorder:
    """The reference run under a Recorder on fake tensors, the integer input real (as a concrete capture has it)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from solbench.data.inputs import generate_inputs
    from solbench.data.reference import reference_module

    lengths = generate_inputs(problem, workload, seed=0, device="cpu", only={"lengths"})["lengths"]
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        q = torch.empty(workload.axes["B"], 4096)
        fake_lengths = mode.from_tensor(lengths, static_shapes=True)
        made = recorder.Recorder(decomposition_for, mode)
        made.give_shadow(fake_lengths, lengths)
        with made:
            reference_module(problem.definition).run(q, fake_lengths)
    return made


def test_the_shortcut_is_taken_where_the_budget_is_spent_and_only_there(tmp_path, monkeypatch):
    problem = mask_problem(tmp_path)
    workload = problem.workloads[1]
    assert run_recorded(problem, workload).unkept_skipped == 0  # the real budget keeps every shadow of this small problem
    monkeypatch.setattr(recorder, "SHADOW_BYTES", BUDGET)
    short = run_recorded(problem, workload)
    assert short.unkept_skipped > workload.axes["B"] // 2  # a mask (at least) for each request after the budget is spent
    monkeypatch.setattr(recorder, "SKIP_UNKEPT_SHADOWS", False)
    long = run_recorded(problem, workload)
    assert long.unkept_skipped == 0
    assert short._shadow_bytes == long._shadow_bytes and len(short.nodes) == len(long.nodes)


def test_an_op_that_writes_its_arguments_runs_for_real_even_when_its_output_cannot_be_kept(monkeypatch):
    """Its real run updates the shadow of what it writes (kept from before), which later reads need."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    read = {}
    for skip in (True, False):
        monkeypatch.setattr(recorder, "SKIP_UNKEPT_SHADOWS", skip)
        real = torch.arange(64)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            counts = mode.from_tensor(real, static_shapes=True)
            made = recorder.Recorder(decomposition_for, mode)
            made.give_shadow(counts, real)
            monkeypatch.setattr(recorder, "SHADOW_BYTES", made._shadow_bytes + 16)  # room for two more values, not 64
            with made:
                counts.add_(5)  # its 64 values do not fit: not kept again, but the kept shadow is written
                halves = counts // 2  # pure, 64 values: nothing could be kept, so it is not run
                read[skip] = (int(counts[0]), int(counts[63]), made.unkept_skipped, halves.shape)
    assert read[True][:2] == read[False][:2] == (5, 68)
    assert read[True][2] >= 1 and read[False][2] == 0


# --- loop estimates price their probes once per set of other axes -----------------------------------

# a gated recurrence, one step per 4 positions of the sequence: its loop count pins S (the loop axis)
RECURRENCE = """import torch

def run(x, w):
    state = torch.zeros_like(x[:, 0])
    for step in range(x.shape[1] // 4):
        state = torch.sigmoid(x[:, 4 * step] + state @ w) * state + x[:, 4 * step + 1]
    return state
"""


def test_a_loop_estimate_prices_its_probes_once_for_the_workloads_that_share_the_other_axes(tmp_path):
    sizes = [(2, 64), (3, 64), (2, 96), (3, 160), (2, 400), (3, 128), (2, 128)]
    problem = write_problem(tmp_path / "recurrence", RECURRENCE, {"x": {"shape": ["B", "S", "H"], "dtype": "float32"}, "w": {"shape": ["H", "H"], "dtype": "float32"}},
                            {"y": {"shape": ["B", "H"], "dtype": "float32"}},
                            {"B": {"type": "var"}, "S": {"type": "var"}, "H": {"type": "const", "value": 16}},
                            [{"axes": {"B": b, "S": s}, "inputs": {"x": {"type": "random"}, "w": {"type": "random"}}} for b, s in sizes])
    shared = Captures(problem, decomposition_for)
    once = [analyze(problem, w, H200, "relaxed", shared) for w in problem.workloads]
    assert shared.loop_axis == "S"
    (estimate,) = [e for e in shared.loops.values() if e]
    extrapolated = [r for r in once if r.notes and r.notes[0].startswith("extrapolated along S")]
    assert len(extrapolated) >= 5 and len(estimate.priced) == 2  # one pricing of the probes per batch size

    again = Captures(problem, decomposition_for)  # the long way: the probes priced anew for every workload
    each = []
    for workload in problem.workloads:
        for made in again.loops.values():
            if made:
                made.priced.clear()
        each.append(analyze(problem, workload, H200, "relaxed", again))
    assert [r.to_json() for r in once] == [r.to_json() for r in each]
    for a, b in zip(once, each):  # and the per-op breakdown kept with each result
        assert [(n.node.index, n.node.op, n.time_s) for n in a.nodes] == [(n.node.index, n.node.op, n.time_s) for n in b.nodes]
    h100 = get_hardware("H100-SXM")
    other = analyze(problem, problem.workloads[4], h100, "relaxed", shared)  # another spec is priced for itself
    for made in again.loops.values():
        if made:
            made.priced.clear()
    assert other.to_json() == analyze(problem, problem.workloads[4], h100, "relaxed", again).to_json()
    assert other.to_json() != once[4].to_json() and other.notes == once[4].notes


# --- the garbage collector: fewer passes, and the recorder's tensors let go of without it ------------


def test_a_recorder_lets_go_of_its_tensors_and_shadows_without_the_garbage_collector():
    import gc
    import weakref

    from torch._subclasses.fake_tensor import FakeTensorMode

    gc.disable()
    try:
        real = torch.arange(1000)
        alive = weakref.ref(real)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake = mode.from_tensor(real, static_shapes=True)
            made = recorder.Recorder(decomposition_for, mode)
            made.give_shadow(fake, real)
            with made:
                doubled = fake * 2
        del real, fake, doubled
        assert alive() is not None  # held by the recorder, which its modes hold in a reference cycle
        made.release()
        assert alive() is None and made._shadow_bytes == 0 and len(made.nodes) == 1
    finally:
        gc.enable()


def test_the_collectors_threshold_is_raised_only_while_a_problem_is_analysed_and_changes_no_bound(tmp_path, monkeypatch):
    import gc

    from solbench.sol import api

    problem = mask_problem(tmp_path)
    before = gc.get_threshold()
    seen = []
    with api.fewer_collections():
        seen.append(gc.get_threshold())
    assert seen == [(max(before[0], api.GC_YOUNG_THRESHOLD), *before[1:])] and gc.get_threshold() == before
    fewer = analyze_problem_workloads((problem, list(problem.workloads), H200, "auto", False))
    monkeypatch.setattr(api, "GC_YOUNG_THRESHOLD", 50)
    gc.set_threshold(50, 2, 2)  # passes far more often than Python's default, full ones among them
    try:
        often = analyze_problem_workloads((problem, list(problem.workloads), H200, "auto", False))
    finally:
        gc.set_threshold(*before)
    assert [r.to_json() for r in fewer] == [r.to_json() for r in often]
