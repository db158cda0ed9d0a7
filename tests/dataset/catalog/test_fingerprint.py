"""Graph fingerprints: equal for problems that differ only in sizes, names and constants; different otherwise."""

from __future__ import annotations

import json
from pathlib import Path

from solbench.data.loaders import load_problems
from solbench.dataset.catalog.analyse import characterise_problem
from solbench.dataset.catalog.fingerprint import concrete_var_values, graph_fingerprint, graph_structure
from solbench.dataset.catalog.sample import deduplicate
from solbench.sol.analysis import problem_captures
from solbench.sol.hardware import get_hardware

RMSNORM = """import torch

def run({x}, {w}, {eps_name}):
    v = {x}.float()
    r = torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + {eps})
    return (v * r).to({x}.dtype) * {w}
"""


def write_problem(folder: Path, name: str, *, tokens: str = "T", hidden: str = "H", size: int = 64, x: str = "x", w: str = "w",
                  eps: str = "1e-5", dtype: str = "bfloat16", body: str = RMSNORM, values: tuple[int, ...] = (3, 16, 40)) -> Path:
    path = folder / name
    path.mkdir(parents=True)
    definition = {
        "name": name, "op_type": "rmsnorm", "description": f"RMSNorm over {size} features",
        "axes": {tokens: {"type": "var"}, hidden: {"type": "const", "value": size}},
        "inputs": {x: {"shape": [tokens, hidden], "dtype": dtype}, w: {"shape": [hidden], "dtype": dtype},
                   "eps_in": {"shape": None, "dtype": "float32"}},
        "outputs": {"out": {"shape": [tokens, hidden], "dtype": dtype}},
        "reference": body.format(x=x, w=w, eps=eps, eps_name="eps_in"),
    }
    (path / "definition.json").write_text(json.dumps(definition))
    lines = [json.dumps({"uuid": f"{name}-{v}", "axes": {tokens: v},
                         "inputs": {x: {"type": "random"}, w: {"type": "random"}, "eps_in": {"type": "scalar", "value": 1e-6}}})
             for v in values]
    (path / "workload.jsonl").write_text("\n".join(lines) + "\n")
    return path


def fingerprint(path: Path) -> str:
    problem = load_problems([path])[0]
    row = characterise_problem(problem, path.parent, get_hardware("H200"))
    assert row.error is None, row.error
    return row.fingerprint


def test_same_graph_up_to_sizes_names_and_constants(tmp_path: Path) -> None:
    base = fingerprint(write_problem(tmp_path, "norm_a"))
    assert fingerprint(write_problem(tmp_path, "norm_b", size=4096)) == base  # another hidden_size
    renamed = write_problem(tmp_path, "norm_c", tokens="num_tokens", hidden="hidden_size", x="hidden_states", w="weight", eps="1e-6", size=1024)
    assert fingerprint(renamed) == base  # other input and axis names, another eps, another size
    assert fingerprint(write_problem(tmp_path, "norm_d", values=(2, 7, 500, 9000))) == base  # other workloads of the var axis


def test_a_different_graph_has_a_different_fingerprint(tmp_path: Path) -> None:
    base = fingerprint(write_problem(tmp_path, "norm_a"))
    layernorm = RMSNORM.replace("v.pow(2).mean(-1, keepdim=True)", "(v - v.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True)")
    assert fingerprint(write_problem(tmp_path, "norm_centered", body=layernorm)) != base  # an op more
    sigmoid = RMSNORM.replace("torch.rsqrt(", "torch.sigmoid(")
    assert fingerprint(write_problem(tmp_path, "norm_sigmoid", body=sigmoid)) != base  # another op
    assert fingerprint(write_problem(tmp_path, "norm_fp16", dtype="float16")) != base  # another dtype
    reduced_other_axis = RMSNORM.replace("mean(-1, keepdim=True)", "mean(0, keepdim=True)")
    assert fingerprint(write_problem(tmp_path, "norm_dim0", body=reduced_other_axis)) != base  # another shape structure


def test_concrete_capture_maps_var_axis_sizes_to_symbols(tmp_path: Path) -> None:
    """A concrete graph (as for data-dependent references) is canonical too: the var axis's size becomes a symbol."""
    from solbench.sol.capture import capture_concrete

    fingerprints = set()
    for name, size, tokens in (("norm_a", 64, 40), ("norm_b", 256, 40), ("norm_c", 64, 24)):
        path = write_problem(tmp_path, name, size=size, values=(tokens,))
        problem = load_problems([path])[0]
        graph = capture_concrete(problem, problem.workloads[0])
        values = concrete_var_values(problem.axes(problem.workloads[0]), problem.definition.var_axes)
        assert values == {tokens: "T"}
        fingerprints.add(graph_fingerprint(graph, values))
        assert graph_structure(graph, values)["inputs"][0] == ["t0", "bfloat16", ["s0", "k"]]
    assert len(fingerprints) == 1


def test_bundled_duplicates_are_the_two_bf16_gemms(bundled_index) -> None:
    unique, groups = deduplicate(bundled_index.problems)
    assert [(g.kept.name, [r.name for r in g.dropped]) for g in groups] == [("gemm_bf16_llama3_8b_o_proj", ["gemm_bf16_llama3_8b_qkv_proj"])]
    assert len(unique) == len(bundled_index.problems) - 1
    assert len({row.fingerprint for row in unique}) == len(unique)


def test_symbolic_structure_has_no_names_or_constants(tmp_path: Path) -> None:
    problem = load_problems([write_problem(tmp_path, "norm_a", x="very_special_name", size=4096)])[0]
    captures = problem_captures(problem)
    captures.graph(problem.workloads[0])
    text = json.dumps(graph_structure(captures.symbolic[0].graph))
    assert "very_special_name" not in text and "4096" not in text and "1e-05" not in text
