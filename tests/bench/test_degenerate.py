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


def test_the_draws_stop_once_every_output_has_changed():
    """Perturbing `a` changes both outputs: `b` and `c` are never drawn afresh (the check costs two runs of
    the reference, not one per input); where an output stays constant, every input is tried."""
    problem = inline_problem("all_on_a", "import torch\n\ndef run(a, b, c):\n    return a + b, a * c\n",
                             {"a": ([4], "float32"), "b": ([4], "float32"), "c": ([4], "float32")}, {"s": ([4], "float32"), "p": ([4], "float32")})
    report = find_constant_outputs(problem)
    assert report.perturbed_inputs == ["a"] and not report.degenerate
    problem = inline_problem("late", "import torch\n\ndef run(a, b, c):\n    return a + b, torch.zeros_like(c)\n",
                             {"a": ([4], "float32"), "b": ([4], "float32"), "c": ([4], "float32")}, {"s": ([4], "float32"), "z": ([4], "float32")})
    report = find_constant_outputs(problem)
    assert report.perturbed_inputs == ["a", "b", "c"] and report.constant_outputs == ["z"]
