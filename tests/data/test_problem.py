"""check_workload / check_problem: every way a workload can fail to fit its definition."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from solbench.data.definition import Definition
from solbench.data.errors import SpecError
from solbench.data.problem import Problem, check_problem, check_workload, require_valid
from solbench.data.workload import Workload

REFERENCE = """\
import torch

def run(x, w, s, t, flag, q, idx):
    return x

def make_inputs(axes, device):
    return {}
"""


def definition_json(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "check_me",
        "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 4}, "K": {"type": "var"}},
        "inputs": {
            "x": {"shape": ["M", "N"], "dtype": "float32"},
            "w": {"shape": ["N"], "dtype": "bfloat16"},
            "s": {"shape": None, "dtype": "float32"},
            "t": {"shape": [], "dtype": "int32"},
            "flag": {"shape": None, "dtype": "bool"},
            "q": {"shape": ["M", "K"], "dtype": "float4_e2m1"},
            "idx": {"shape": ["M"], "dtype": "int64"},
        },
        "outputs": {"y": {"shape": ["M", "N"], "dtype": "float32"}},
        "reference": REFERENCE,
    }
    data.update(overrides)
    return data


GOOD_WORKLOAD: dict[str, Any] = {
    "uuid": "good-0001",
    "axes": {"M": 3, "K": 6},
    "inputs": {
        "x": {"type": "random"},
        "w": {"type": "random"},
        "s": {"type": "scalar", "value": 0.5},
        "t": {"type": "scalar", "value": 7},
        "flag": {"type": "scalar", "value": True},
        "q": {"type": "random"},
        "idx": {"type": "random"},
    },
}


@pytest.fixture
def definition() -> Definition:
    return Definition.model_validate(definition_json())


def workload_with(**inputs: Any) -> Workload:
    data = copy.deepcopy(GOOD_WORKLOAD)
    for name, spec in inputs.items():
        if spec is None:
            del data["inputs"][name]
        else:
            data["inputs"][name] = spec
    return Workload.model_validate(data)


def found(definition: Definition, workload: Workload, root: Path | None = None) -> list[tuple[str | None, str]]:
    return [(i.field, i.message) for i in check_workload(definition, workload, root)]


def test_a_good_workload_has_no_issue(definition):
    assert found(definition, workload_with()) == []


def test_axis_issues_come_first(definition):
    workload = Workload.model_validate({**GOOD_WORKLOAD, "axes": {"K": 6, "N": 5}})
    # an unbound var axis stops the checks: nothing else (not even the bad const N) is reported
    assert found(definition, workload) == [("axes.M", "var axis 'M' is not bound")]


def test_const_axis_overridden_by_the_workload(definition):
    workload = Workload.model_validate({**GOOD_WORKLOAD, "axes": {"M": 3, "K": 6, "N": 5}})
    assert found(definition, workload) == [("axes.N", "axis 'N' is const = 4; the workload may not set it to 5")]


def test_missing_input(definition):
    assert found(definition, workload_with(w=None)) == [("inputs.w", "input 'w' of the definition is not described")]


def test_unknown_input_is_a_warning(definition):
    # a quirk of public data (a workload lists inputs the definition lacks): ignored, and said once
    issues = check_workload(definition, workload_with(z={"type": "random"}), None)
    assert [(i.field, i.severity) for i in issues] == [("inputs.z", "warning")]
    assert "unknown input 'z' ignored (the definition's inputs: x, w, s, t, flag, q, idx)" == issues[0].message


def test_unknown_axis_is_a_warning(definition):
    issues = check_workload(definition, Workload.model_validate({**GOOD_WORKLOAD, "axes": {**GOOD_WORKLOAD["axes"], "is_joint_block": 1}}), None)
    assert [(i.field, i.severity) for i in issues] == [("axes.is_joint_block", "warning")]
    assert issues[0].message.startswith("unknown axis 'is_joint_block' ignored")


def test_missing_and_unknown_together(definition):
    # the missing inputs stop the check; the unknown one is not reached
    assert sorted(f for f, _ in found(definition, workload_with(w=None, s=None, z={"type": "custom"}))) == ["inputs.s", "inputs.w"]


def test_scalar_for_a_tensor_shape(definition):
    assert found(definition, workload_with(x={"type": "scalar", "value": 1.0})) == [
        ("inputs.x", "a scalar value cannot fill a tensor of shape ['M', 'N']; use random, safetensors or custom")
    ]


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("t", 7, True),
        ("t", -7, True),
        ("t", 7.0, False),
        ("t", True, False),
        ("flag", False, True),
        ("flag", 1, False),
        ("flag", 1.0, False),
        ("s", 2, True),
        ("s", 2.5, True),
        ("s", True, False),
    ],
)
def test_scalar_value_types(definition, name, value, accepted):
    issues = found(definition, workload_with(**{name: {"type": "scalar", "value": value}}))
    if accepted:
        assert issues == []
    else:
        assert [f for f, _ in issues] == [f"inputs.{name}.value"]
        assert repr(value) in issues[0][1]


def test_a_python_scalar_may_be_random_or_custom(definition):
    # public data: one random draw of the dtype, or a value from the problem's own input function
    assert found(definition, workload_with(s={"type": "random"})) == []
    with_entry = Definition.model_validate(definition_json(custom_inputs_entrypoint="make_inputs"))
    assert found(with_entry, workload_with(s={"type": "custom"})) == []
    assert found(definition, workload_with(s={"type": "custom"})) == [("inputs.s", "a custom input needs custom_inputs_entrypoint in the definition")]


def test_a_python_scalar_cannot_come_from_a_file(definition):
    assert found(definition, workload_with(s={"type": "safetensors", "path": "a.safetensors", "tensor_key": "s"})) == [
        ("inputs.s", "input 's' is a Python scalar (shape null); describe it as scalar, random or custom")
    ]


def test_zero_d_tensor_may_be_random(definition):
    assert found(definition, workload_with(t={"type": "random"})) == []


def test_custom_input_needs_an_entrypoint(definition):
    assert found(definition, workload_with(x={"type": "custom"})) == [("inputs.x", "a custom input needs custom_inputs_entrypoint in the definition")]
    with_entry = Definition.model_validate(definition_json(custom_inputs_entrypoint="make_inputs"))
    assert found(with_entry, workload_with(x={"type": "custom"})) == []


def test_fp4_input_with_an_odd_last_dimension(definition):
    workload = Workload.model_validate({**GOOD_WORKLOAD, "axes": {"M": 3, "K": 5}})
    issues = found(definition, workload)
    assert [f for f, _ in issues] == ["inputs.q"]
    assert issues[0][1].startswith("input a float4_e2m1 tensor needs an even last dimension")
    assert "[3, 5]" in issues[0][1]


def test_fp4_output_with_an_odd_last_dimension():
    definition = Definition.model_validate(
        definition_json(
            inputs={"x": {"shape": ["M", "N"], "dtype": "float32"}},
            outputs={"packed": {"shape": ["K"], "dtype": "float4_e2m1"}},
            reference="def run(x):\n    return x\n",
        )
    )
    workload = Workload.model_validate({"uuid": "u", "axes": {"M": 2, "K": 7}, "inputs": {"x": {"type": "random"}}})
    issues = found(definition, workload)
    assert [f for f, _ in issues] == ["outputs.packed"]
    assert issues[0][1].startswith("output a float4_e2m1 tensor needs an even last dimension")


def test_fp4_zero_d_random_input_cannot_be_packed():
    definition = Definition.model_validate(
        definition_json(inputs={"q": {"shape": [], "dtype": "float4_e2m1"}}, reference="def run(q):\n    return q\n")
    )
    workload = Workload.model_validate({"uuid": "u", "axes": {"M": 2, "K": 2}, "inputs": {"q": {"type": "random"}}})
    assert [f for f, _ in found(definition, workload)] == ["inputs.q"]


def test_fp4_zero_d_scalar_input_is_rejected():
    definition = Definition.model_validate(
        definition_json(inputs={"q": {"shape": [], "dtype": "float4_e2m1"}}, reference="def run(q):\n    return q\n")
    )
    workload = Workload.model_validate({"uuid": "u", "axes": {"M": 2, "K": 2}, "inputs": {"q": {"type": "scalar", "value": 1.0}}})
    assert [f for f, _ in found(definition, workload)] == ["inputs.q"]


def test_workload_distribution_is_checked(definition):
    issues = found(definition, workload_with(idx={"type": "random", "distribution": {"kind": "normal"}}))
    assert issues == [("inputs.idx.distribution.kind", "kind 'normal' does not fit a int64 input; use 'integers'")]
    issues = found(definition, workload_with(idx={"type": "random", "distribution": {"kind": "integers", "low": "M", "high": "M"}}))
    assert issues == [("inputs.idx.distribution", "low (3) must be below high (3)")]
    issues = found(definition, workload_with(idx={"type": "random", "distribution": {"kind": "integers", "high": "V"}}))
    assert [f for f, _ in issues] == ["inputs.idx.distribution"]
    assert "unknown axis V" in issues[0][1]
    assert found(definition, workload_with(idx={"type": "random", "distribution": {"kind": "integers", "high": "M * K"}})) == []


def test_declared_distribution_is_resolved_for_the_workload():
    data = definition_json()
    data["inputs"]["idx"]["distribution"] = {"kind": "integers", "low": 1, "high": "M"}
    definition = Definition.model_validate(data)
    assert found(definition, workload_with()) == []  # M = 3: [1, 3)
    workload = Workload.model_validate({**GOOD_WORKLOAD, "axes": {"M": 1, "K": 6}})
    assert found(definition, workload) == [("inputs.idx.distribution", "low (1) must be below high (1)")]


def test_integer_range_must_fit_the_dtype():
    data = definition_json()
    data["inputs"]["idx"] = {"shape": ["M"], "dtype": "int8", "distribution": {"kind": "integers", "high": 1000}}
    definition = Definition.model_validate(data)
    assert [f for f, _ in found(definition, workload_with())] == ["inputs.idx.distribution"]


# --- safetensors ------------------------------------------------------------------------------


@pytest.fixture
def blob(tmp_path: Path) -> Path:
    (tmp_path / "blob").mkdir()
    save_file(
        {
            "x": torch.zeros(3, 4),
            "x_half": torch.zeros(3, 4, dtype=torch.float16),
            "x_wide": torch.zeros(3, 5),
            "w": torch.zeros(4, dtype=torch.bfloat16),
            "q_packed": torch.zeros(3, 3, dtype=torch.uint8),
            "q_bad": torch.zeros(3, 6, dtype=torch.uint8),
            "idx": torch.arange(3),
        },
        str(tmp_path / "blob" / "data.safetensors"),
    )
    return tmp_path


def st(key: str, path: str = "blob/data.safetensors") -> dict[str, str]:
    return {"type": "safetensors", "path": path, "tensor_key": key}


def test_safetensors_inputs_that_fit(definition, blob):
    workload = workload_with(x=st("x"), w=st("w"), q=st("q_packed"), idx=st("idx"))
    assert found(definition, workload, blob) == []


def test_safetensors_absolute_path_needs_no_root(definition, blob):
    workload = workload_with(x=st("x", str(blob / "blob" / "data.safetensors")))
    assert found(definition, workload, None) == []


def test_safetensors_relative_path_needs_a_root(definition, blob):
    assert found(definition, workload_with(x=st("x")), None) == [
        ("inputs.x.path", "relative path 'blob/data.safetensors' needs a problem folder to resolve against")
    ]


def test_safetensors_file_missing(definition, blob):
    issues = found(definition, workload_with(x=st("x", "blob/missing.safetensors")), blob)
    assert issues == [("inputs.x.path", f"safetensors file {str(blob / 'blob' / 'missing.safetensors')!r} does not exist "
                                        "(pass --synthesize-missing-blobs to draw such inputs from the definition instead)")]
    synthesized = check_workload(definition, workload_with(x=st("x", "blob/missing.safetensors")), blob, synthesize_missing=True)
    assert [(i.field, i.severity) for i in synthesized] == [("inputs.x.path", "warning")]
    assert "the input is synthesized from the definition (--synthesize-missing-blobs)" in synthesized[0].message


def test_safetensors_key_missing(definition, blob):
    issues = found(definition, workload_with(x=st("nope")), blob)
    assert [f for f, _ in issues] == ["inputs.x.tensor_key"]
    assert "holds no tensor 'nope'" in issues[0][1]
    assert "(it has: idx, q_bad, q_packed, w, x, x_half, x_wide)" in issues[0][1]


def test_safetensors_wrong_shape(definition, blob):
    assert found(definition, workload_with(x=st("x_wide")), blob) == [
        ("inputs.x", "tensor 'x_wide' is float32[3, 5], the definition needs float32[3, 4]")
    ]


def test_safetensors_wrong_dtype(definition, blob):
    assert found(definition, workload_with(x=st("x_half")), blob) == [
        ("inputs.x", "tensor 'x_half' is float16[3, 4], the definition needs float32[3, 4]")
    ]


def test_safetensors_fp4_is_checked_as_packed_bytes(definition, blob):
    assert found(definition, workload_with(q=st("q_bad")), blob) == [
        ("inputs.q", "tensor 'q_bad' is uint8[3, 6], the definition needs uint8[3, 3]")
    ]
    assert found(definition, workload_with(q=st("x")), blob) == [
        ("inputs.q", "tensor 'x' is float32[3, 4], the definition needs uint8[3, 3]")
    ]


def test_safetensors_unreadable_file(definition, tmp_path):
    (tmp_path / "bad.safetensors").write_bytes(b"\x05\x00")
    issues = found(definition, workload_with(x=st("x", "bad.safetensors")), tmp_path)
    assert [f for f, _ in issues] == ["inputs.x.path"]
    assert "cannot read safetensors file" in issues[0][1]
    (tmp_path / "huge.safetensors").write_bytes((10**9).to_bytes(8, "little") + b"{}")
    issues = found(definition, workload_with(x=st("x", "huge.safetensors")), tmp_path)
    assert [f for f, _ in issues] == ["inputs.x.path"]
    assert "does not fit the file" in issues[0][1]


def test_safetensors_fp4_saved_natively_is_accepted(definition, blob):
    packed = torch.zeros(3, 3, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    save_file({"q": packed}, str(blob / "blob" / "fp4.safetensors"))
    assert found(definition, workload_with(q=st("q", "blob/fp4.safetensors")), blob) == []


# --- check_problem ----------------------------------------------------------------------------


def test_check_problem_locates_issues_at_workload_lines(definition):
    good = workload_with()
    missing = Workload.model_validate({**copy.deepcopy(GOOD_WORKLOAD), "uuid": "second", "inputs": {k: v for k, v in GOOD_WORKLOAD["inputs"].items() if k != "x"}})
    duplicate = workload_with()
    problem = Problem(definition, [good, missing, duplicate], workload_lines=[1, 3, 7])
    issues = check_problem(problem)
    assert [(i.line, i.field, i.message) for i in issues] == [
        (3, "inputs.x", "input 'x' of the definition is not described"),
        (7, "uuid", "uuid 'good-0001' repeats workload 1"),
    ]
    assert all(i.severity == "error" for i in issues)


def test_duplicate_uuid_is_reported_for_each_repeat(definition):
    problem = Problem(definition, [workload_with(), workload_with(), workload_with()], workload_lines=[2, 4, 6])
    assert [(i.line, i.message) for i in check_problem(problem)] == [
        (4, "uuid 'good-0001' repeats workload 1"),
        (6, "uuid 'good-0001' repeats workload 1"),
    ]


def test_check_problem_without_line_numbers(definition):
    problem = Problem(definition, [workload_with(), workload_with(w=None)])
    assert [(i.line, i.field) for i in check_problem(problem)] == [(None, "inputs.w"), (None, "uuid")]


def test_check_problem_uses_the_problem_root(definition, blob):
    problem = Problem(definition, [workload_with(x=st("x"))], root=blob, workload_lines=[1])
    assert check_problem(problem) == []
    assert require_valid(problem) is problem
    elsewhere = Problem(definition, [workload_with(x=st("x"))], root=blob / "blob", source=blob / "blob", workload_lines=[5])
    with pytest.raises(SpecError) as info:
        require_valid(elsewhere)
    (issue,) = info.value.issues
    assert (issue.path, issue.line, issue.field) == (blob / "blob", 5, "inputs.x.path")


def test_problem_helpers(definition):
    first = Workload.model_validate({**GOOD_WORKLOAD, "uuid": "abcdef-123"})
    second = Workload.model_validate({**GOOD_WORKLOAD, "uuid": "zzz", "axes": {"M": 5, "K": 2}})
    problem = Problem(definition, [first, second])
    assert problem.name == "check_me"
    assert problem.workload("abcdef-123") is first
    assert problem.workload("abcdef") is first  # a prefix of at least six characters
    assert problem.workload("zzz") is second
    with pytest.raises(KeyError):
        problem.workload("abc")  # too short to be a prefix
    with pytest.raises(KeyError):
        problem.workload("missing")
    assert problem.axes(second) == {"M": 5, "N": 4, "K": 2}


def test_exact_uuid_wins_over_a_prefix_match(definition):
    longer = Workload.model_validate({**GOOD_WORKLOAD, "uuid": "abcdefgh"})
    exact = Workload.model_validate({**GOOD_WORKLOAD, "uuid": "abcdef"})
    problem = Problem(definition, [longer, exact])
    assert problem.workload("abcdef") is exact
