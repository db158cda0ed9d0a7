"""The reference under torch.compile compiles whatever the reference is made of: decorators
(`@torch.no_grad()`, `@torch.inference_mode()`), module-level helpers, constants, classes,
`functools.partial`s and imports. torch.compile resolves the globals of every function it inlines by
importing that function's module by name; a reference module that is not importable by name failed
public references with `ModuleNotFoundError: No module named 'reference'`.

Each shape of reference is built as the evaluator builds the compiled candidate (the real builder,
its module handling) and run under dynamo with the eager backend, which traces exactly as inductor
does but compiles nothing: fast enough for every case. One reference with all of them then goes
through the whole evaluator with inductor on the CPU (mode default), and on a GPU with both default
GPU modes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from solbench.bench.builders import build
from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.bench.verify import compiled_reference, time_trusted
from solbench.data.definition import Definition
from solbench.data.problem import Problem
from solbench.data.reference import reference_module
from solbench.data.trace import Status
from solbench.data.workload import Workload

HEADER = "import functools\nimport math\n\nimport torch\nimport torch.nn.functional as F\n\n"
REFERENCES = {
    "no_grad": HEADER + "@torch.no_grad()\ndef run(x):\n    return x * 2.0 + 1.0\n",
    "inference_mode": HEADER + "@torch.inference_mode()\ndef run(x):\n    return torch.tanh(x) * 3.0\n",
    "helper_and_constant": HEADER + "SCALE = 1.5\n\n\ndef _helper(x):\n    return F.silu(x) * SCALE\n\n\n@torch.no_grad()\ndef run(x):\n    return _helper(x) + math.pi\n",
    "class": HEADER + ("class Scaler(torch.nn.Module):\n    def __init__(self, factor):\n        super().__init__()\n        self.factor = factor\n\n"
                       "    def forward(self, x):\n        return x * self.factor\n\n\n_MODEL = Scaler(4.0)\n\n\n@torch.no_grad()\ndef run(x):\n    return _MODEL(x) - 1.0\n"),
    "partial": HEADER + "_softmax = functools.partial(torch.softmax, dim=-1)\n\n\n@torch.no_grad()\ndef run(x):\n    return _softmax(x)\n",
    "future_annotations": "from __future__ import annotations\n\n" + HEADER + "@torch.no_grad()\ndef run(x: torch.Tensor) -> torch.Tensor:\n    return x.relu()\n",
}
ALL_OF_THEM = HEADER + ("SCALE = 0.5\n\n\nclass Gate(torch.nn.Module):\n    def forward(self, x):\n        return torch.sigmoid(x)\n\n\n_GATE = Gate()\n"
                        "_norm = functools.partial(F.layer_norm, normalized_shape=(16,))\n\n\ndef _mix(x):\n    return _GATE(x) * x * SCALE\n\n\n"
                        "@torch.inference_mode()\ndef _inner(x):\n    return _norm(_mix(x))\n\n\n@torch.no_grad()\ndef run(x):\n    return _inner(x) + math.e\n")


def problem_of(reference: str, name: str = "compiled_shapes") -> Problem:
    definition = Definition.model_validate({
        "name": name, "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 16}},
        "inputs": {"x": {"shape": ["M", "N"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["M", "N"], "dtype": "float32"}},
        "reference": reference,
    })
    return Problem(definition, [Workload.model_validate({"uuid": "m8", "axes": {"M": 8}, "inputs": {"x": {"type": "random"}}})])


def built_with_eager_backend(problem: Problem, cache: Path):
    """The compiled candidate built by the real builder, with inductor swapped for dynamo's eager backend."""
    solution = compiled_reference(problem, "default")
    data = solution.to_json_dict()
    (main,) = data["sources"]
    assert "mode='default'" in main["content"]
    main["content"] = main["content"].replace("mode='default', dynamic=False", "backend='eager', dynamic=False, fullgraph=False")
    return build(type(solution).model_validate(data), cache_root=cache, device="cpu").function


@pytest.mark.parametrize("shape", sorted(REFERENCES))
def test_the_compiled_candidate_traces_every_shape_of_reference(shape: str, tmp_path: Path):
    torch._dynamo.reset()
    problem = problem_of(REFERENCES[shape], name=f"shape_{shape}")
    function = built_with_eager_backend(problem, tmp_path)
    x = torch.randn(8, 16)
    expected = reference_module(problem.definition).run(x)
    with torch._dynamo.config.patch(suppress_errors=False):
        got = function(x)
    torch.testing.assert_close(got, expected)


def test_two_problems_with_the_same_names_keep_their_own_globals(tmp_path: Path):
    torch._dynamo.reset()
    first = problem_of(HEADER + "SCALE = 2.0\n\n\n@torch.no_grad()\ndef run(x):\n    return x * SCALE\n", name="same_names_a")
    second = problem_of(HEADER + "SCALE = 3.0\n\n\n@torch.no_grad()\ndef run(x):\n    return x * SCALE\n", name="same_names_b")
    x = torch.ones(8, 16)
    with torch._dynamo.config.patch(suppress_errors=False):
        assert built_with_eager_backend(first, tmp_path)(x).unique().tolist() == [2.0]
        assert built_with_eager_backend(second, tmp_path)(x).unique().tolist() == [3.0]


def test_the_reference_module_is_importable_by_name_for_in_process_compiles():
    torch._dynamo.reset()
    problem = problem_of(REFERENCES["helper_and_constant"], name="in_process")
    module = reference_module(problem.definition)
    import importlib

    assert importlib.import_module(module.__name__) is module and module.__name__.startswith("solbench_reference_")
    other = reference_module(problem_of(REFERENCES["helper_and_constant"], name="in_process_other").definition)
    assert other is not module and other.__name__ != module.__name__  # the same source in another problem: a module of its own
    x = torch.randn(8, 16)
    with torch._dynamo.config.patch(suppress_errors=False):
        torch.testing.assert_close(torch.compile(module.run, backend="eager")(x), module.run(x))


FAST = dict(device="cpu", trials=1, min_iterations=3, budget_s=0.2, warmup=1, verify_timed=1, timeout_s=240.0, hidden=0, seed=1)


def test_a_reference_with_all_of_them_passes_as_an_inductor_candidate_through_the_evaluator(tmp_path: Path):
    problem = problem_of(ALL_OF_THEM, name="all_of_them")
    (trace,) = evaluate(problem, compiled_reference(problem, "default"), EvalOptions(**FAST, cache_root=tmp_path / "builds"))
    assert trace.evaluation.status == Status.PASSED, trace.evaluation.log
    assert trace.evaluation.performance.latency_ms > 0
    # in this process too (time_trusted, as `sol --verify` times it): compiled, compared with eager, timed
    (check,) = time_trusted(problem, EvalOptions(**FAST), compile_modes=("default",))
    assert not check.failures and check.times_ms["compile-default"] > 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("mode", ["default", "max-autotune-no-cudagraphs"])
def test_a_reference_with_all_of_them_compiles_on_a_gpu(mode: str, tmp_path: Path):
    problem = problem_of(ALL_OF_THEM, name=f"all_of_them_gpu_{mode}".replace("-", "_"))
    options = dataclasses.replace(EvalOptions(**FAST, cache_root=tmp_path / "builds"), device="cuda")
    (trace,) = evaluate(problem, compiled_reference(problem, mode), options)
    assert trace.evaluation.status == Status.PASSED, trace.evaluation.log


def test_many_decorated_references_and_many_shapes_are_all_compiled_in_one_process(tmp_path: Path):
    """Dynamo keeps compiled graphs on the code object it is given and runs every call eagerly, quietly,
    once that holds 8: the @torch.no_grad() wrapper is one code object for every decorated reference,
    and a problem timed at more than 8 shapes hits the same limit. Here each of 12 problems' compiled
    candidates, and one of them at 12 shapes, is traced: a frame compiled at every new call."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    frames = lambda: counters["frames"]["ok"]  # noqa: E731

    with torch._dynamo.config.patch(suppress_errors=False):
        functions = []
        for index in range(12):
            problem = problem_of(HEADER + f"@torch.no_grad()\ndef run(x):\n    return x * {index + 2}.0 + 1.0\n", name=f"decorated_{index}")
            functions.append(built_with_eager_backend(problem, tmp_path))
            before = frames()
            assert functions[-1](torch.ones(8, 16)).unique().tolist() == [index + 3.0]
            assert frames() > before, f"the compiled candidate of problem {index + 1} ran eagerly"
        for rows in range(1, 13):
            before = frames()
            assert functions[0](torch.ones(rows, 16)).shape == (rows, 16)
            assert frames() > before or rows == 8, f"shape {rows} ran eagerly"  # 8 rows: compiled above
