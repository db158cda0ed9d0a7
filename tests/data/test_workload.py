"""Workload: input descriptions, tolerance (with the ratio alias), validation errors."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest
from pydantic import ValidationError

from solbench.data.errors import SpecWarning
from solbench.data.files import parse_model
from solbench.data.trace import Trace
from solbench.data.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Tolerance, Workload


def workload(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"uuid": "w-1", "axes": {"M": 4}, "inputs": {"x": {"type": "random"}}}
    data.update(overrides)
    return data


def errors_of(data: dict[str, Any]) -> list[tuple[str | None, str]]:
    model, issues = parse_model(Workload, data)
    assert model is None
    return [(i.field, i.message) for i in issues if i.severity == "error"]


def test_every_input_type():
    data = workload(
        inputs={
            "a": {"type": "random"},
            "b": {"type": "random", "distribution": {"kind": "uniform", "low": -1, "high": 1}},
            "c": {"type": "scalar", "value": 3},
            "d": {"type": "safetensors", "path": "blob/d.safetensors", "tensor_key": "d"},
            "e": {"type": "custom"},
        }
    )
    model = Workload.model_validate(data)
    inputs = model.inputs
    assert isinstance(inputs["a"], RandomInput) and inputs["a"].distribution is None
    assert isinstance(inputs["b"], RandomInput)
    assert inputs["b"].distribution.kind == "uniform" and (inputs["b"].distribution.low, inputs["b"].distribution.high) == (-1, 1)
    assert isinstance(inputs["c"], ScalarInput) and inputs["c"].value == 3
    assert isinstance(inputs["d"], SafetensorsInput) and (inputs["d"].path, inputs["d"].tensor_key) == ("blob/d.safetensors", "d")
    assert isinstance(inputs["e"], CustomInput)
    assert list(inputs) == ["a", "b", "c", "d", "e"]
    assert model.to_json_dict() == data


@pytest.mark.parametrize("value", [True, False, 0, 7, -3, 2**40, 2.5, 1.0, -0.0, 1e-30])
def test_scalar_values_keep_their_json_type(value):
    model = ScalarInput.model_validate({"type": "scalar", "value": value})
    assert model.value == value
    assert type(model.value) is type(value)
    assert model.to_json_dict() == {"type": "scalar", "value": value}
    assert type(model.to_json_dict()["value"]) is type(value)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"type": "bogus"}, "inputs.x"),
        ({"type": "Random"}, "inputs.x"),
        ({"value": 1}, "inputs.x"),
        ({"type": 3}, "inputs.x"),
        ("random", "inputs.x"),
        ({"type": "scalar"}, "inputs.x.value"),
        ({"type": "scalar", "value": [1, 2]}, "inputs.x.value"),
        ({"type": "scalar", "value": None}, "inputs.x.value"),
        ({"type": "safetensors", "path": "a.safetensors"}, "inputs.x.tensor_key"),
        ({"type": "safetensors", "tensor_key": "a"}, "inputs.x.path"),
        ({"type": "safetensors", "path": "", "tensor_key": "a"}, "inputs.x.path"),
        ({"type": "safetensors", "path": "a.safetensors", "tensor_key": ""}, "inputs.x.tensor_key"),
        ({"type": "random", "distribution": {"kind": "poisson"}}, "inputs.x.distribution.kind"),
    ],
)
def test_input_errors(spec, field):
    errors = errors_of(workload(inputs={"x": spec}))
    # untagged unions (the scalar value) add the member's name to the path: inputs.x.value.int, ...
    assert errors and all(f == field or f.startswith(field + ".") for f, _ in errors), errors
    with pytest.raises(ValidationError):
        Workload.model_validate(workload(inputs={"x": spec}))


def test_unknown_input_type_names_the_choices():
    ((field, message),) = errors_of(workload(inputs={"x": {"type": "bogus"}}))
    assert field == "inputs.x"
    assert "{type: random} | {type: scalar, value} | {type: safetensors, path, tensor_key} | {type: custom}" in message
    assert "'bogus'" in message


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"uuid": ""}, "uuid"),
        ({"uuid": 5}, "uuid"),
        ({"axes": {"M": "4"}}, "axes.M"),
        ({"axes": {"M": 4.0}}, "axes.M"),
        ({"axes": {"M": True}}, "axes.M"),
        ({"axes": [4]}, "axes"),
        ({"inputs": [{"type": "random"}]}, "inputs"),
        ({"tolerance": 0.1}, "tolerance"),
    ],
)
def test_workload_errors(data, field):
    assert field in [f for f, _ in errors_of(workload(**data))]


def test_missing_uuid():
    data = workload()
    del data["uuid"]
    assert errors_of(data) == [("uuid", "Field required")]


def test_minimal_workload():
    model = Workload.model_validate({"uuid": "u"})
    assert model.axes == {} and model.inputs == {} and model.tolerance is None
    assert model.effective_tolerance == Tolerance()
    assert model.to_json_dict() == {"uuid": "u"}


def test_tolerance_defaults():
    tolerance = Tolerance()
    assert tolerance.max_atol == 1e-2
    assert tolerance.max_rtol == 1e-2
    assert tolerance.required_matched_ratio == 0.99  # the public layout's default (issue 10)
    assert tolerance.max_error_cap is None
    assert tolerance.allow_negative_inf is False
    assert tolerance.error_cap == math.inf
    assert Tolerance(max_error_cap=5.0).error_cap == 5.0
    assert tolerance.to_json_dict() == {}  # nothing was set: nothing is written


def test_tolerance_matches():
    tolerance = Tolerance(max_atol=0.5, max_rtol=0.1)
    assert tolerance.matches(0.5, 0.0)
    assert not tolerance.matches(0.51, 0.0)
    assert tolerance.matches(1.5, 10.0)  # 0.5 + 0.1 * 10
    assert not tolerance.matches(1.6, 10.0)
    assert Tolerance(max_atol=0, max_rtol=0).matches(0.0, 123.0)


def test_effective_tolerance_is_the_workloads_own():
    model = Workload.model_validate(workload(tolerance={"max_atol": 0.5}))
    assert model.effective_tolerance.max_atol == 0.5
    assert model.effective_tolerance.max_rtol == 1e-2


@pytest.mark.parametrize(
    ("tolerance", "field"),
    [
        ({"max_atol": -0.1}, "tolerance.max_atol"),
        ({"max_rtol": -1}, "tolerance.max_rtol"),
        ({"required_matched_ratio": 1.5}, "tolerance.required_matched_ratio"),
        ({"required_matched_ratio": -0.01}, "tolerance.required_matched_ratio"),
        ({"max_error_cap": -1}, "tolerance.max_error_cap"),
        ({"max_atol": float("nan")}, "tolerance.max_atol"),
        ({"max_atol": "big"}, "tolerance.max_atol"),
        ({"required_match_ratio": 2}, "tolerance.required_matched_ratio"),
    ],
)
def test_tolerance_bounds(tolerance, field):
    assert field in [f for f, _ in errors_of(workload(tolerance=tolerance))]


def test_tolerance_edges_are_accepted():
    model = Tolerance.model_validate({"max_atol": 0, "max_rtol": 0, "required_matched_ratio": 0, "max_error_cap": 0})
    assert (model.max_atol, model.max_rtol, model.required_matched_ratio, model.max_error_cap) == (0, 0, 0, 0)
    assert Tolerance.model_validate({"required_matched_ratio": 1}).required_matched_ratio == 1
    assert Tolerance.model_validate({"max_atol": float("inf")}).max_atol == math.inf


def test_ratio_alias_is_accepted_with_a_warning():
    with pytest.warns(SpecWarning, match="required_match_ratio read as required_matched_ratio"):
        tolerance = Tolerance.model_validate({"max_atol": 0.1, "required_match_ratio": 0.95})
    assert tolerance.required_matched_ratio == 0.95
    assert tolerance.to_json_dict() == {"max_atol": 0.1, "required_match_ratio": 0.95}


def test_canonical_ratio_gives_no_warning_and_is_written_back():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tolerance = Tolerance.model_validate({"required_matched_ratio": 0.95})
    assert tolerance.to_json_dict() == {"required_matched_ratio": 0.95}


def test_ratio_alias_through_parse_model():
    data = workload(tolerance={"max_rtol": 0.02, "required_match_ratio": 0.9})
    model, issues = parse_model(Workload, data)
    assert model is not None
    assert model.tolerance.required_matched_ratio == 0.9
    assert len(issues) == 1
    (issue,) = issues
    assert issue.severity == "warning"
    assert "required_match_ratio" in issue.message
    assert model.to_json_dict() == data  # written back as it was spelled


def test_ratio_alias_warning_is_located(tmp_path):
    path = tmp_path / "workload.jsonl"
    model, issues = parse_model(Workload, workload(tolerance={"required_match_ratio": 0.9}), path=path, line=7, prefix="workload")
    assert model is not None
    assert [(i.severity, i.path, i.line, i.field) for i in issues] == [("warning", path, 7, "workload")]
    assert str(issues[0]).startswith(f"{path}:7: workload: warning: ")


def test_ratio_alias_inside_a_trace():
    data = {"definition": "d", "workload": workload(tolerance={"required_match_ratio": 0.5})}
    trace, issues = parse_model(Trace, data)
    assert trace is not None and trace.workload.tolerance.required_matched_ratio == 0.5
    assert [i.severity for i in issues] == ["warning"]
    assert trace.to_json_dict() == data


def test_conflicting_alias_and_canonical_are_rejected():
    errors = errors_of(workload(tolerance={"required_matched_ratio": 0.9, "required_match_ratio": 0.8}))
    assert [f for f, _ in errors] == ["tolerance"]
    assert "both required_matched_ratio and required_match_ratio (its alias) are given" in errors[0][1]
    with pytest.raises(ValidationError):
        Tolerance.model_validate({"required_matched_ratio": 0.9, "required_match_ratio": 0.8})


def test_agreeing_alias_and_canonical_are_accepted():
    with pytest.warns(SpecWarning):
        tolerance = Tolerance.model_validate({"required_matched_ratio": 0.9, "required_match_ratio": 0.9})
    assert tolerance.required_matched_ratio == 0.9


def test_agreeing_alias_and_canonical_are_both_written_back():
    data = {"required_matched_ratio": 0.9, "required_match_ratio": 0.9}
    with pytest.warns(SpecWarning):
        tolerance = Tolerance.model_validate(data)
    assert tolerance.to_json_dict() == data


def test_unknown_keys_are_kept_at_every_level():
    data = {
        "uuid": "w",
        "axes": {"M": 2},
        "inputs": {
            "x": {"type": "random", "note": "kept", "distribution": {"kind": "normal", "std": 2, "seed_hint": 4}},
            "s": {"type": "scalar", "value": 1.5, "unit": "s"},
            "t": {"type": "safetensors", "path": "a.safetensors", "tensor_key": "t", "sha256": "00"},
            "c": {"type": "custom", "generator": "v2"},
        },
        "tolerance": {"max_atol": 0.1, "comment": "loose"},
        "source": {"model": "llama", "layer": 3},
    }
    model = Workload.model_validate(data)
    assert model.model_extra == {"source": {"model": "llama", "layer": 3}}
    assert model.inputs["x"].model_extra == {"note": "kept"}
    assert model.to_json_dict() == data


def test_scalar_value_given_as_a_string_is_rejected():
    with pytest.raises(ValidationError):
        ScalarInput.model_validate({"type": "scalar", "value": "3"})
