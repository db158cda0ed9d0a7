"""Degenerate problems: outputs that depend on no tensor input are found by running the reference."""

from __future__ import annotations

from solbench.bench.degenerate import find_constant_outputs
from solbench.data.inline import inline_problem


def test_an_output_that_depends_on_no_input_is_reported():
    problem = inline_problem("shape_only", "import torch\n\ndef run(x, w):\n    return torch.full_like(x, float(x.shape[0])), x @ w\n",
                             {"x": ([8, 8], "float32"), "w": ([8, 8], "float32")}, {"c": ([8, 8], "float32"), "y": ([8, 8], "float32")})
    report = find_constant_outputs(problem)
    assert report.degenerate
    assert report.constant_outputs == ["c"]
    assert report.perturbed_inputs == ["x", "w"] and report.fixed_inputs == []
    assert report.message().startswith("output(s) c of workload shape_only-0 do not change")


def test_a_normal_problem_is_not_degenerate():
    problem = inline_problem("scale", "import torch\n\ndef run(x, alpha):\n    return x * alpha\n",
                             {"x": ([16], "float32"), "alpha": (None, "float32")}, {"y": ([16], "float32")}, scalars={"alpha": 2.0})
    report = find_constant_outputs(problem)
    assert not report.degenerate and report.constant_outputs == [] and report.message() == ""
    assert report.perturbed_inputs == ["x"]  # the scalar is no tensor input


def test_an_output_that_only_one_input_changes_is_not_constant():
    problem = inline_problem("first_only", "import torch\n\ndef run(a, b):\n    return a.sum(dim=0, keepdim=True) + 0 * b.sum()\n",
                             {"a": ([4, 4], "float32"), "b": ([4, 4], "float32")}, {"s": ([1, 4], "float32")})
    assert find_constant_outputs(problem).constant_outputs == []
