"""generate_inputs: seeded, dtype-aware input tensors, scalars, safetensors and custom generators."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from solbench.data.definition import Definition
from solbench.data.dtypes import DType
from solbench.data.inputs import InputGenerationError, derive_seed, generate_inputs
from solbench.data.problem import Problem, check_problem
from solbench.data.reference import reference_module
from solbench.data.workload import Workload

FP8 = (DType.float8_e4m3fn, DType.float8_e5m2)


def make_problem(inputs: dict[str, Any], workload_inputs: dict[str, Any], *, axes: dict[str, Any] | None = None,
                 bound: dict[str, int] | None = None, reference: str | None = None, root: Path | None = None,
                 name: str = "inputs_test", uuid: str = "wl-0001", profile: str | None = "plain", **extra: Any) -> tuple[Problem, Workload]:
    """A problem with one workload; its random inputs follow the plain profile (the subject of this
    file) unless `profile` says otherwise (None: chosen by origin)."""
    definition = Definition.model_validate(
        {
            "name": name,
            "axes": axes if axes is not None else {"M": {"type": "var"}, "N": {"type": "const", "value": 6}},
            "inputs": inputs,
            "outputs": {"out": {"shape": [], "dtype": "float32"}},
            "reference": reference or f"def run({', '.join(inputs)}):\n    return None\n",
            **extra,
        }
    )
    workload = Workload.model_validate({"uuid": uuid, "axes": bound if bound is not None else {"M": 5}, "inputs": workload_inputs})
    problem = Problem(definition, [workload], root=root, workload_lines=[1], input_profile=profile)
    assert check_problem(problem) == [], [str(i) for i in check_problem(problem)]
    return problem, workload


def as_bits(tensor: torch.Tensor) -> torch.Tensor:
    """A view that torch.equal can compare for every dtype (fp8 and fp4 included)."""
    if tensor.dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float4_e2m1fn_x2):
        return tensor.view(torch.uint8)
    return tensor


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(as_bits(a), as_bits(b))


ALL_DTYPES = {f"in_{d.value}": {"shape": ["M", "N"], "dtype": d.value} for d in DType}


@pytest.fixture(scope="module")
def every_dtype() -> tuple[Problem, Workload]:
    return make_problem(ALL_DTYPES, {name: {"type": "random"} for name in ALL_DTYPES})


# --- determinism ------------------------------------------------------------------------------


def test_same_seed_and_trial_give_identical_tensors(every_dtype):
    problem, workload = every_dtype
    first = generate_inputs(problem, workload, seed=3, trial=1)
    second = generate_inputs(problem, workload, seed=3, trial=1)
    assert list(first) == list(ALL_DTYPES)  # the definition's order
    for name in first:
        assert same(first[name], second[name]), name
        assert first[name].data_ptr() != second[name].data_ptr()


@pytest.mark.parametrize("change", [{"seed": 4, "trial": 1}, {"seed": 3, "trial": 2}])
def test_another_trial_or_seed_gives_other_tensors(every_dtype, change):
    problem, workload = every_dtype
    first = generate_inputs(problem, workload, seed=3, trial=1)
    other = generate_inputs(problem, workload, **change)
    for name in first:
        assert first[name].shape == other[name].shape
        assert not same(first[name], other[name]), name


def test_another_workload_uuid_gives_other_tensors():
    inputs = {"x": {"shape": ["M", "N"], "dtype": "float32"}}
    problem, a = make_problem(inputs, {"x": {"type": "random"}}, uuid="uuid-a")
    _, b = make_problem(inputs, {"x": {"type": "random"}}, uuid="uuid-b")
    assert not same(generate_inputs(problem, a)["x"], generate_inputs(problem, b)["x"])


def test_inputs_of_the_same_spec_differ_from_each_other():
    spec = {"shape": ["M", "N"], "dtype": "float32"}
    problem, workload = make_problem({"a": spec, "b": spec}, {"a": {"type": "random"}, "b": {"type": "random"}})
    values = generate_inputs(problem, workload)
    assert not torch.equal(values["a"], values["b"])


def test_generation_ignores_and_keeps_the_global_rng(every_dtype):
    problem, workload = every_dtype
    torch.manual_seed(1)
    first = generate_inputs(problem, workload)
    after_first = torch.rand(3)
    torch.manual_seed(999)
    second = generate_inputs(problem, workload)
    for name in first:
        assert same(first[name], second[name])
    torch.manual_seed(1)
    assert torch.equal(torch.rand(3), after_first)  # generation drew nothing from the global generator


def test_derive_seed():
    assert derive_seed(0, "u", 0, "x") == derive_seed(0, "u", 0, "x")
    seeds = {derive_seed(0, "u", 0, "x"), derive_seed(1, "u", 0, "x"), derive_seed(0, "v", 0, "x"), derive_seed(0, "u", 1, "x"), derive_seed(0, "u", 0, "y")}
    assert len(seeds) == 5
    assert all(0 <= s < 2**63 for s in seeds)


# --- dtypes and shapes --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(DType), ids=lambda d: d.value)
def test_shape_and_dtype_for_every_dtype(every_dtype, dtype):
    problem, workload = every_dtype
    tensor = generate_inputs(problem, workload)[f"in_{dtype.value}"]
    assert isinstance(tensor, torch.Tensor)
    assert tensor.dtype is dtype.torch_dtype()
    assert tensor.device.type == "cpu"
    if dtype is DType.float4_e2m1:
        assert tensor.dtype is torch.float4_e2m1fn_x2
        assert tuple(tensor.shape) == (5, 3)  # the last dimension holds two values per byte
        assert tensor.view(torch.uint8).unique().numel() > 10  # random codes, not a constant
    else:
        assert tuple(tensor.shape) == (5, 6)


@pytest.mark.parametrize("dtype", [d for d in DType if d.is_floating and not d.is_fp4], ids=lambda d: d.value)
def test_default_floats_are_finite_standard_normal(dtype):
    problem, workload = make_problem({"x": {"shape": ["M"], "dtype": dtype.value}}, {"x": {"type": "random"}}, axes={"M": {"type": "var"}}, bound={"M": 20000})
    values = generate_inputs(problem, workload)["x"].to(torch.float64)
    assert torch.isfinite(values).all()
    assert abs(values.mean().item()) < 0.05
    assert abs(values.std().item() - 1) < 0.1  # fp8 rounding widens this a little
    assert (values < 0).any() and (values > 0).any()


@pytest.mark.parametrize("dtype", FP8, ids=lambda d: d.value)
def test_fp8_stays_finite_and_within_range_even_for_a_wide_distribution(dtype):
    inputs = {"x": {"shape": ["M"], "dtype": dtype.value, "distribution": {"kind": "normal", "std": 10**6}}}
    problem, workload = make_problem(inputs, {"x": {"type": "random"}}, axes={"M": {"type": "var"}}, bound={"M": 4096})
    values = generate_inputs(problem, workload)["x"]
    assert values.dtype is dtype.torch_dtype()
    wide = values.to(torch.float32)
    limit = torch.finfo(dtype.torch_dtype()).max
    assert torch.isfinite(wide).all()
    assert wide.abs().max().item() <= limit
    assert wide.abs().max().item() == limit  # clipped at the largest finite value, not beyond


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_default_integers_are_within_0_and_128(dtype):
    problem, workload = make_problem({"i": {"shape": ["M"], "dtype": dtype}}, {"i": {"type": "random"}}, axes={"M": {"type": "var"}}, bound={"M": 20000})
    values = generate_inputs(problem, workload)["i"].to(torch.int64)
    assert values.min().item() == 0 and values.max().item() == 127


def test_bool_draws_are_a_fair_coin():
    problem, workload = make_problem({"b": {"shape": ["M"], "dtype": "bool"}}, {"b": {"type": "random"}}, axes={"M": {"type": "var"}}, bound={"M": 20000})
    values = generate_inputs(problem, workload)["b"]
    assert values.dtype is torch.bool
    assert 0.47 < values.float().mean().item() < 0.53


def test_zero_sized_and_zero_d_tensors():
    inputs = {"e": {"shape": ["M", "N"], "dtype": "float32"}, "z": {"shape": [], "dtype": "int32"}, "q": {"shape": [0], "dtype": "float4_e2m1"}}
    problem, workload = make_problem(inputs, {name: {"type": "random"} for name in inputs}, bound={"M": 0})
    values = generate_inputs(problem, workload)
    assert tuple(values["e"].shape) == (0, 6)
    assert values["z"].dim() == 0 and values["z"].dtype is torch.int32
    assert tuple(values["q"].shape) == (0,)


# --- declared distributions --------------------------------------------------------------------


def draw(dtype: str, distribution: dict[str, Any], size: int = 50000, **axes: int) -> torch.Tensor:
    axis_decl = {"M": {"type": "var"}, **{name: {"type": "var"} for name in axes}}
    inputs = {"x": {"shape": ["M"], "dtype": dtype, "distribution": distribution}}
    problem, workload = make_problem(inputs, {"x": {"type": "random"}}, axes=axis_decl, bound={"M": size, **axes})
    return generate_inputs(problem, workload)["x"]


def test_uniform_within_low_and_high():
    values = draw("float32", {"kind": "uniform", "low": -3, "high": 5})
    assert values.dtype is torch.float32
    assert values.min().item() >= -3 and values.max().item() < 5
    assert values.min().item() < -2.9 and values.max().item() > 4.9  # covers the range
    assert abs(values.mean().item() - 1) < 0.05


def test_uniform_with_expression_bounds():
    values = draw("float64", {"kind": "uniform", "low": "0 - V", "high": "V"}, V=4)
    assert values.dtype is torch.float64
    assert values.min().item() >= -4 and values.max().item() < 4
    assert values.min().item() < -3.9 and values.max().item() > 3.9


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_uniform_low_precision_stays_below_high(dtype):
    values = draw(dtype, {"kind": "uniform", "low": 0, "high": 1}, size=100000)
    assert values.float().max().item() < 1


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_uniform_fp8_stays_below_high_and_covers_the_range(dtype):
    """fp8 has no comparisons on a CPU: the draw that rounds up to `high` is replaced all the same."""
    values = draw(dtype, {"kind": "uniform", "low": -2, "high": 2}, size=100000)
    assert values.dtype == getattr(torch, dtype)
    widened = values.float()
    assert widened.max().item() < 2 and widened.min().item() >= -2 and widened.max().item() >= 1.75
    assert (widened == widened.max()).sum().item() > 100  # the draws that rounded to 2 became the value below it


def test_integers_within_a_literal_range():
    values = draw("int32", {"kind": "integers", "low": -2, "high": 3})
    assert values.dtype is torch.int32
    assert sorted(values.unique().tolist()) == [-2, -1, 0, 1, 2]


def test_integers_with_an_axis_expression_as_high():
    values = draw("int64", {"kind": "integers", "high": "V"}, V=7)
    assert values.dtype is torch.int64
    assert sorted(values.unique().tolist()) == list(range(7))
    values = draw("int64", {"kind": "integers", "low": "V", "high": "V * 2"}, V=3)
    assert sorted(values.unique().tolist()) == [3, 4, 5]


def test_integers_filling_uint8():
    values = draw("uint8", {"kind": "integers", "low": 0, "high": 256})
    assert values.min().item() == 0 and values.max().item() == 255


def test_integers_for_a_bool_input():
    values = draw("bool", {"kind": "integers", "low": 1, "high": 2}, size=100)
    assert values.dtype is torch.bool and bool(values.all())


def test_integers_that_do_not_fit_the_dtype():
    with pytest.raises(AssertionError, match=r"integers in \[0, 1000\) do not fit int8"):
        draw("int8", {"kind": "integers", "high": 1000}, size=10)  # check_workload refuses it before any draw


def test_normal_mean_and_std():
    values = draw("float32", {"kind": "normal", "mean": 5, "std": 2}, size=200000)
    assert abs(values.mean().item() - 5) < 0.03
    assert abs(values.std().item() - 2) < 0.03
    values = draw("float64", {"kind": "normal", "mean": "V", "std": 0.5}, size=200000, V=10)
    assert abs(values.mean().item() - 10) < 0.01
    assert abs(values.std().item() - 0.5) < 0.01


def test_workload_distribution_overrides_the_declared_one():
    inputs = {"x": {"shape": ["M"], "dtype": "float32", "distribution": {"kind": "normal", "mean": 100}}}
    problem, workload = make_problem(inputs, {"x": {"type": "random", "distribution": {"kind": "uniform", "low": 0, "high": 1}}}, axes={"M": {"type": "var"}}, bound={"M": 1000})
    values = generate_inputs(problem, workload)["x"]
    assert values.min().item() >= 0 and values.max().item() < 1


# --- scalars ----------------------------------------------------------------------------------


def test_python_scalars():
    inputs = {
        "f": {"shape": None, "dtype": "float32"},
        "f_from_int": {"shape": None, "dtype": "float64"},
        "i": {"shape": None, "dtype": "int64"},
        "b": {"shape": None, "dtype": "bool"},
    }
    workload_inputs = {
        "f": {"type": "scalar", "value": 0.25},
        "f_from_int": {"type": "scalar", "value": 3},
        "i": {"type": "scalar", "value": -7},
        "b": {"type": "scalar", "value": False},
    }
    problem, workload = make_problem(inputs, workload_inputs)
    values = generate_inputs(problem, workload)
    assert values == {"f": 0.25, "f_from_int": 3.0, "i": -7, "b": False}
    assert type(values["f"]) is float and type(values["f_from_int"]) is float
    assert type(values["i"]) is int and type(values["b"]) is bool


@pytest.mark.parametrize(("dtype", "value"), [("float32", 1.5), ("bfloat16", 2), ("int32", 9), ("bool", True), ("float8_e4m3fn", 0.5)])
def test_zero_d_tensor_scalars(dtype, value):
    problem, workload = make_problem({"t": {"shape": [], "dtype": dtype}}, {"t": {"type": "scalar", "value": value}})
    tensor = generate_inputs(problem, workload)["t"]
    assert isinstance(tensor, torch.Tensor)
    assert tensor.dim() == 0
    assert tensor.dtype is DType(dtype).torch_dtype()
    assert tensor.to(torch.float64).item() == float(value)


# --- safetensors ------------------------------------------------------------------------------


def test_safetensors_input_is_loaded_as_a_fresh_copy(tmp_path):
    stored = torch.arange(30, dtype=torch.float32).reshape(5, 6)
    save_file({"weights": stored}, str(tmp_path / "data.safetensors"))
    inputs = {"x": {"shape": ["M", "N"], "dtype": "float32"}}
    problem, workload = make_problem(inputs, {"x": {"type": "safetensors", "path": "data.safetensors", "tensor_key": "weights"}}, root=tmp_path)
    first = generate_inputs(problem, workload)["x"]
    assert torch.equal(first, stored)
    first.fill_(-1)  # a solution that writes into its input must not change the next call's data
    second = generate_inputs(problem, workload)["x"]
    assert torch.equal(second, stored)
    assert first.data_ptr() != second.data_ptr()
    third = generate_inputs(problem, workload, seed=5, trial=3)["x"]
    assert torch.equal(third, stored)  # file data do not depend on the seed
    assert third.data_ptr() not in (first.data_ptr(), second.data_ptr())


def test_safetensors_absolute_path(tmp_path):
    stored = torch.tensor([True, False, True, True, False])
    path = tmp_path / "abs.safetensors"
    save_file({"mask": stored}, str(path))
    problem, workload = make_problem({"m": {"shape": ["M"], "dtype": "bool"}}, {"m": {"type": "safetensors", "path": str(path), "tensor_key": "mask"}})
    assert torch.equal(generate_inputs(problem, workload)["m"], stored)


def test_safetensors_fp4_stored_as_packed_bytes(tmp_path):
    codes = torch.randint(0, 256, (5, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    save_file({"q": codes}, str(tmp_path / "fp4.safetensors"))
    inputs = {"q": {"shape": ["M", "N"], "dtype": "float4_e2m1"}}
    problem, workload = make_problem(inputs, {"q": {"type": "safetensors", "path": "fp4.safetensors", "tensor_key": "q"}}, root=tmp_path)
    tensor = generate_inputs(problem, workload)["q"]
    assert tensor.dtype is torch.float4_e2m1fn_x2 and tuple(tensor.shape) == (5, 3)
    assert torch.equal(tensor.view(torch.uint8), codes)


def test_safetensors_wrong_dtype_is_an_input_generation_error(tmp_path):
    save_file({"x": torch.zeros(5, 6, dtype=torch.float16)}, str(tmp_path / "half.safetensors"))
    definition = Definition.model_validate(
        {"name": "st_dtype", "axes": {"M": {"type": "var"}}, "inputs": {"x": {"shape": ["M", 6], "dtype": "float32"}},
         "outputs": {"y": {"shape": [], "dtype": "float32"}}, "reference": "def run(x):\n    return x\n"}
    )
    workload = Workload.model_validate({"uuid": "u", "axes": {"M": 5}, "inputs": {"x": {"type": "safetensors", "path": "half.safetensors", "tensor_key": "x"}}})
    problem = Problem(definition, [workload], root=tmp_path)
    assert [i.field for i in check_problem(problem)] == ["inputs.x"]  # the check sees it first ...
    with pytest.raises(InputGenerationError, match=r"input 'x' is float16\[5, 6\], the definition declares float32\[5, 6\]"):
        generate_inputs(problem, workload)  # ... and generation refuses it too


def test_safetensors_file_rewritten_in_place_gives_the_new_data(tmp_path):
    path = tmp_path / "data.safetensors"
    save_file({"x": torch.zeros(5, 6)}, str(path))
    problem, workload = make_problem({"x": {"shape": ["M", "N"], "dtype": "float32"}}, {"x": {"type": "safetensors", "path": "data.safetensors", "tensor_key": "x"}}, root=tmp_path)
    assert torch.equal(generate_inputs(problem, workload)["x"], torch.zeros(5, 6))
    save_file({"x": torch.ones(5, 6)}, str(path))
    assert torch.equal(generate_inputs(problem, workload)["x"], torch.ones(5, 6))


# --- custom generators ------------------------------------------------------------------------

CUSTOM_REFERENCE = """\
import torch

CALLS = []

def run(x, lengths, scale):
    return x

def make_inputs(axes, device):
    CALLS.append(dict(axes))
    M, N = axes["M"], axes["N"]
    return {
        "x": torch.randn(M, N, device=device),
        "lengths": torch.randint(0, N, (M,), device=device, dtype=torch.int32),
        "unused": torch.zeros(1),
    }
"""


def custom_problem(reference: str = CUSTOM_REFERENCE, name: str = "custom_ok", **workload_inputs: Any) -> tuple[Problem, Workload]:
    inputs = {
        "x": {"shape": ["M", "N"], "dtype": "float32"},
        "lengths": {"shape": ["M"], "dtype": "int32"},
        "scale": {"shape": None, "dtype": "float32"},
    }
    described = {"x": {"type": "custom"}, "lengths": {"type": "custom"}, "scale": {"type": "scalar", "value": 2.0}}
    described.update(workload_inputs)
    return make_problem(inputs, described, reference=reference, name=name, custom_inputs_entrypoint="make_inputs",
                        axes={"M": {"type": "var"}, "N": {"type": "const", "value": 6}, "P": {"type": "expr", "expression": "M * N"}})


def test_custom_generator_is_seeded():
    problem, workload = custom_problem()
    first = generate_inputs(problem, workload, seed=1)
    again = generate_inputs(problem, workload, seed=1)
    other = generate_inputs(problem, workload, seed=2)
    other_trial = generate_inputs(problem, workload, seed=1, trial=1)
    assert list(first) == ["x", "lengths", "scale"]
    assert tuple(first["x"].shape) == (5, 6) and first["x"].dtype is torch.float32
    assert first["lengths"].dtype is torch.int32 and int(first["lengths"].max()) < 6
    assert first["scale"] == 2.0
    assert torch.equal(first["x"], again["x"]) and torch.equal(first["lengths"], again["lengths"])
    assert not torch.equal(first["x"], other["x"])
    assert not torch.equal(first["x"], other_trial["x"])


@pytest.mark.parametrize("making, draws", [
    ("torch.randint(0, N, (M,), device=device, dtype=torch.int32)", True),
    ("torch.from_numpy(numpy.random.randint(0, N, M).astype('int32'))", True),
    ("torch.tensor([random.randrange(N) for _ in range(M)], dtype=torch.int32)", True),
    ("torch.arange(M, dtype=torch.int32) % N", False),
])
def test_whether_the_custom_generator_draws_at_random(making, draws):
    """custom_entry_draws sees a draw from torch's, numpy's or Python's generator, and leaves theirs as they were."""
    import random

    import numpy

    from solbench.data.inputs import custom_entry_draws

    reference = ("import random\nimport numpy\nimport torch\n\ndef run(x, lengths, scale):\n    return x\n\n"
                 "def make_inputs(axes, device):\n    M, N = axes['M'], axes['N']\n"
                 f"    return {{'x': torch.zeros(M, N), 'lengths': {making}}}\n")
    problem, workload = custom_problem(reference, name="custom_draws")
    random.seed(3)
    numpy.random.seed(3)
    expected = (random.random(), numpy.random.rand())
    random.seed(3)
    numpy.random.seed(3)
    assert custom_entry_draws(problem, workload) is draws
    assert (random.random(), numpy.random.rand()) == expected


def test_custom_generator_gets_every_axis_and_runs_once_per_call():
    problem, workload = custom_problem()
    calls = reference_module(problem.definition).CALLS
    calls.clear()
    generate_inputs(problem, workload)
    assert calls == [{"M": 5, "N": 6, "P": 30}]  # one call for both custom inputs


def test_custom_generator_leaves_the_global_rng_alone():
    problem, workload = custom_problem()
    torch.manual_seed(11)
    expected = torch.rand(4)
    torch.manual_seed(11)
    generate_inputs(problem, workload)
    assert torch.equal(torch.rand(4), expected)


def test_custom_and_random_inputs_together():
    problem, workload = custom_problem(lengths={"type": "random", "distribution": {"kind": "integers", "high": "N"}})
    values = generate_inputs(problem, workload)
    assert values["lengths"].dtype is torch.int32 and int(values["lengths"].max()) < 6


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"x": torch.randn(M, N + 1), "lengths": torch.zeros(M, dtype=torch.int32)}', r"input 'x' is float32\[5, 7\], the definition declares float32\[5, 6\]"),
        ('{"x": torch.randn(M, N, dtype=torch.float64), "lengths": torch.zeros(M, dtype=torch.int32)}', r"input 'x' is float64\[5, 6\], the definition declares float32\[5, 6\]"),
        ('{"x": torch.randn(M, N), "lengths": torch.zeros(M)}', r"input 'lengths' is float32\[5\], the definition declares int32\[5\]"),
        ('{"x": torch.randn(M, N)}', r"make_inputs\(\) returned no 'lengths'"),
        ('{"x": [[0.0] * N] * M, "lengths": torch.zeros(M, dtype=torch.int32)}', r"input 'x' should be a tensor, got list"),
        ('[torch.randn(M, N)]', r"make_inputs\(\) returned 1 values; expected one per input \(3\) or per custom input \(2\)"),
        ('torch.randn(M, N)', r"make_inputs\(\) must return a dict of input name -> tensor, got Tensor"),
    ],
)
def test_custom_generator_errors(body, message):
    reference = (
        "import torch\n\ndef run(x, lengths, scale):\n    return x\n\n"
        f"def make_inputs(axes, device):\n    M, N = axes['M'], axes['N']\n    return {body}\n"
    )
    problem, workload = custom_problem(reference=reference, name=f"custom_bad_{abs(hash(body))}")
    with pytest.raises(InputGenerationError, match=message):
        generate_inputs(problem, workload)


def test_invalid_axes_stop_generation():
    problem, _ = custom_problem()
    bad = Workload.model_validate({"uuid": "bad", "axes": {}, "inputs": {"x": {"type": "custom"}, "lengths": {"type": "custom"}, "scale": {"type": "scalar", "value": 1.0}}})
    from solbench.data.errors import SpecError

    with pytest.raises(SpecError, match="var axis 'M' is not bound"):
        generate_inputs(problem, bad)


def test_inputs_are_on_the_requested_device():
    problem, workload = custom_problem()
    for value in generate_inputs(problem, workload, device=torch.device("cpu")).values():
        if isinstance(value, torch.Tensor):
            assert value.device == torch.device("cpu")
