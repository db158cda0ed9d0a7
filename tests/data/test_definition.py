"""Definition: axes, shapes, constraints, reference checks, distributions and axis resolution."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from solbench.data.definition import ConstAxis, Definition, Distribution, ExprAxis, TensorSpec, VarAxis
from solbench.data.dtypes import DType
from solbench.data.errors import Issue, SpecError
from solbench.data.files import parse_model


def issues_of(data: dict[str, Any]) -> list[Issue]:
    definition, issues = parse_model(Definition, data)
    assert definition is None, "expected the definition to be rejected"
    assert issues and all(i.severity == "error" for i in issues)
    return issues


def fields_of(data: dict[str, Any]) -> list[str | None]:
    return [i.field for i in issues_of(data)]


def one_issue(data: dict[str, Any]) -> Issue:
    issues = issues_of(data)
    assert len(issues) == 1, [str(i) for i in issues]
    return issues[0]


def valid(data: dict[str, Any]) -> Definition:
    definition, issues = parse_model(Definition, data)
    assert issues == [], [str(i) for i in issues]
    assert definition is not None
    return definition


# --- axes -------------------------------------------------------------------------------------


def test_const_var_and_expr_axes(definition_data):
    data = definition_data(
        axes={
            "M": {"type": "var"},
            "N": {"type": "const", "value": 64},
            "K": {"type": "expr", "expression": "M * N"},
        },
        inputs={"x": {"shape": ["M", "N"], "dtype": "float32"}, "scale": {"shape": None, "dtype": "float32"}},
        outputs={"y": {"shape": ["K"], "dtype": "float32"}},
    )
    definition = valid(data)
    assert isinstance(definition.axes["M"], VarAxis)
    assert isinstance(definition.axes["N"], ConstAxis) and definition.axes["N"].value == 64
    assert isinstance(definition.axes["K"], ExprAxis) and definition.axes["K"].expression == "M * N"
    assert definition.var_axes == ["M"]
    assert definition.axis_order == ["K"]
    assert definition.axes_for({"M": 3}) == {"M": 3, "N": 64, "K": 192}
    assert definition.inputs["scale"].is_scalar
    assert not definition.inputs["x"].is_scalar
    assert definition.inputs["x"].resolve_shape({"M": 3, "N": 64}) == (3, 64)
    assert definition.inputs["scale"].resolve_shape({}) == ()
    assert list(definition.inputs) == ["x", "scale"]  # order is kept: it is run()'s order


def test_shapes_take_integer_literals_and_zero_d(definition_data):
    definition = valid(
        definition_data(
            inputs={"x": {"shape": ["M", 3, 0], "dtype": "float16"}, "t": {"shape": [], "dtype": "int64"}},
        )
    )
    assert definition.inputs["x"].resolve_shape({"M": 5}) == (5, 3, 0)
    assert definition.inputs["t"].resolve_shape({"M": 5}) == ()
    assert definition.inputs["t"].shape == [] and not definition.inputs["t"].is_scalar


def test_expression_axes_may_use_expression_axes_declared_in_any_order(definition_data):
    data = definition_data(
        axes={
            "D": {"type": "expr", "expression": "C * B"},
            "C": {"type": "expr", "expression": "B + 1"},
            "B": {"type": "expr", "expression": "A * 2"},
            "A": {"type": "var"},
        },
        inputs={"x": {"shape": ["A", "B", "C", "D"], "dtype": "float32"}},
        outputs={"y": {"shape": ["D"], "dtype": "float32"}},
    )
    definition = valid(data)
    order = definition.axis_order
    assert sorted(order) == ["B", "C", "D"]
    assert order.index("B") < order.index("C") < order.index("D")
    assert definition.axes_for({"A": 3}) == {"A": 3, "B": 6, "C": 7, "D": 42}


@pytest.mark.parametrize(
    ("axes", "cycle"),
    [
        ({"A": {"type": "expr", "expression": "B + 1"}, "B": {"type": "expr", "expression": "A + 1"}}, "A, B"),
        ({"A": {"type": "expr", "expression": "A + 1"}}, "A"),
        (
            {
                "M": {"type": "var"},
                "A": {"type": "expr", "expression": "M + C"},
                "B": {"type": "expr", "expression": "A"},
                "C": {"type": "expr", "expression": "B * 2"},
            },
            "A, B, C",
        ),
    ],
)
def test_expression_cycles_are_rejected(definition_data, axes, cycle):
    data = definition_data(axes=axes, inputs={}, outputs={"y": {"shape": [], "dtype": "float32"}})
    issue = one_issue(data)
    assert issue.field == "axes"
    assert f"cycle: {cycle}" in issue.message
    with pytest.raises(SpecError):
        Definition.model_validate(data)


def test_unknown_axis_in_an_expression(definition_data):
    issue = one_issue(definition_data(axes={"M": {"type": "var"}, "K": {"type": "expr", "expression": "M * Q + R"}}))
    assert issue.field == "axes.K.expression"
    assert "unknown axis Q, R" in issue.message


def test_bad_expression_syntax_is_a_structural_error(definition_data):
    data = definition_data(axes={"M": {"type": "var"}, "K": {"type": "expr", "expression": "M.bit_length()"}})
    with pytest.raises(ValidationError):
        Definition.model_validate(data)
    issue = one_issue(data)
    assert issue.field == "axes.K.expression"
    assert "only the functions abs, cdiv, ceil_div, max, min may be called" in issue.message


@pytest.mark.parametrize(
    ("axis", "field"),
    [
        ({"type": "sym"}, "axes.M"),  # an unknown tag
        ({"value": 3}, "axes.M"),  # no tag
        ({"type": "const"}, "axes.M.value"),
        ({"type": "const", "value": -1}, "axes.M.value"),
        ({"type": "const", "value": True}, "axes.M.value"),
        ({"type": "const", "value": 2.0}, "axes.M.value"),
        ({"type": "const", "value": "4"}, "axes.M.value"),
        ({"type": "expr"}, "axes.M.expression"),
    ],
)
def test_malformed_axes(definition_data, axis, field):
    data = definition_data(axes={"M": axis}, inputs={}, outputs={"y": {"shape": [], "dtype": "float32"}})
    with pytest.raises(ValidationError):
        Definition.model_validate(data)
    assert fields_of(data) == [field]


@pytest.mark.parametrize("name", ["my-axis", "1M", "class", "a b"])
def test_axis_names_must_be_identifiers(definition_data, name):
    data = definition_data(axes={name: {"type": "var"}}, inputs={"x": {"shape": [name], "dtype": "float32"}}, outputs={"y": {"shape": [name], "dtype": "float32"}})
    issue = one_issue(data)
    assert issue.field == f"axes.{name}"
    assert "not an identifier" in issue.message


# --- shapes, names, constraints ------------------------------------------------------------


def test_unknown_axes_in_shapes(definition_data):
    data = definition_data(
        inputs={"x": {"shape": ["M", "Q"], "dtype": "float32"}},
        outputs={"y": {"shape": ["R", 2], "dtype": "float32"}},
    )
    issues = issues_of(data)
    assert [i.field for i in issues] == ["inputs.x.shape", "outputs.y.shape"]
    assert "unknown axis 'Q'" in issues[0].message and "declared axes: M" in issues[0].message
    assert "unknown axis 'R'" in issues[1].message


def test_unknown_axis_in_a_shape_without_any_axes(definition_data):
    issue = one_issue(definition_data(axes={}, inputs={"x": {"shape": ["M"], "dtype": "float32"}}, outputs={"y": {"shape": [4], "dtype": "float32"}}))
    assert issue.field == "inputs.x.shape"
    assert "declared axes: none" in issue.message


def test_negative_and_float_shape_literals_are_rejected(definition_data):
    for dim in (-1, 2.5, None):
        data = definition_data(inputs={"x": {"shape": ["M", dim], "dtype": "float32"}})
        fields = fields_of(data)
        assert fields and all(f.startswith("inputs.x.shape.1") for f in fields), fields


def test_constraints(definition_data):
    data = definition_data(
        axes={"H_q": {"type": "var"}, "H_kv": {"type": "var"}, "G": {"type": "expr", "expression": "H_q // H_kv"}},
        constraints=["H_q == H_kv * G", "H_kv > 0 and H_q % H_kv == 0", "1 <= G <= 8"],
        inputs={"q": {"shape": ["H_q"], "dtype": "float32"}},
        outputs={"o": {"shape": ["H_q"], "dtype": "float32"}},
    )
    definition = valid(data)
    assert definition.axes_for({"H_q": 8, "H_kv": 2}) == {"H_q": 8, "H_kv": 2, "G": 4}
    values, issues = definition.resolve_axes({"H_q": 9, "H_kv": 2})
    assert values == {"H_q": 9, "H_kv": 2, "G": 4}
    assert [i.field for i in issues] == ["axes", "axes"]
    assert "'H_q == H_kv * G' does not hold for {'G': 4, 'H_kv': 2, 'H_q': 9}" in issues[0].message
    assert "'H_kv > 0 and H_q % H_kv == 0'" in issues[1].message
    _, issues = definition.resolve_axes({"H_q": 32, "H_kv": 2})
    assert [i.message for i in issues] == ["constraint '1 <= G <= 8' does not hold for {'G': 16}"]
    # a constraint whose evaluation fails is an issue of that constraint, not a crash
    _, issues = definition.resolve_axes({"H_q": 4, "H_kv": 0})
    assert [i.field for i in issues] == ["axes.G"]
    assert "division by zero" in issues[0].message


def test_constraint_errors(definition_data):
    data = definition_data(constraints=["M > 0", "M == Q", "M >", "M.x > 1"])
    issues = issues_of(data)
    assert [i.field for i in issues] == ["constraints.1", "constraints.2", "constraints.3"]
    assert "unknown axis Q" in issues[0].message
    assert "cannot parse" in issues[1].message
    assert "Attribute is not allowed" in issues[2].message


def test_constraint_with_a_division_by_zero_is_reported(definition_data):
    definition = valid(definition_data(axes={"M": {"type": "var"}, "N": {"type": "var"}}, constraints=["M % N == 0"]))
    _, issues = definition.resolve_axes({"M": 4, "N": 0})
    assert [i.field for i in issues] == ["constraints.0"]
    assert "division by zero" in issues[0].message


@pytest.mark.parametrize("name", ["my-input", "1x", "class", "x.y", "a b", "lambda"])
def test_input_names_must_be_identifiers(definition_data, name):
    data = definition_data(inputs={name: {"shape": ["M"], "dtype": "float32"}}, reference="def run(x):\n    return x\n")
    issues = issues_of(data)
    assert f"inputs.{name}" in [i.field for i in issues]
    assert any("not a Python identifier" in i.message for i in issues if i.field == f"inputs.{name}")


def test_output_names_must_be_identifiers(definition_data):
    issue = one_issue(definition_data(outputs={"out-1": {"shape": ["M"], "dtype": "float32"}}))
    assert issue.field == "outputs.out-1"


def test_a_name_cannot_be_both_input_and_output(definition_data):
    issue = one_issue(definition_data(outputs={"x": {"shape": ["M"], "dtype": "float32"}}))
    assert issue.field == "outputs.x"
    assert "both an input and an output" in issue.message


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": "bad name"}, "name"),
        ({"name": "-leading"}, "name"),
        ({"name": ""}, "name"),
        ({"outputs": {}}, "outputs"),
        ({"inputs": {"x": {"shape": ["M"], "dtype": "float33"}}}, "inputs.x.dtype"),
        ({"inputs": {"x": {"shape": ["M"]}}}, "inputs.x.dtype"),
        ({"inputs": {"x": {"dtype": "float32"}}}, "inputs.x.shape"),
        ({"inputs": {"x": {"shape": "M", "dtype": "float32"}}}, "inputs.x.shape"),
        ({"inputs": ["x"]}, "inputs"),
        ({"constraints": "M > 0"}, "constraints"),
        ({"reference": 3}, "reference"),
        ({"inputs": {"x": {"shape": ["M"], "dtype": "float32", "distribution": {"kind": "gamma"}}}}, "inputs.x.distribution.kind"),
    ],
)
def test_structural_errors(definition_data, data, field):
    full = definition_data(**data)
    with pytest.raises(ValidationError):
        Definition.model_validate(full)
    assert field in fields_of(full)


@pytest.mark.parametrize("key", ["name", "inputs", "outputs", "reference"])
def test_required_keys(definition_data, key):
    data = definition_data()
    del data[key]
    assert fields_of(data) == [key]


def test_names_may_hold_dots_and_dashes(definition_data):
    assert valid(definition_data(name="gemm.fp16-v2_a")).name == "gemm.fp16-v2_a"


def test_optional_fields_and_defaults(definition_data):
    definition = valid(definition_data())
    assert definition.op_type is None and definition.hf_id is None
    assert definition.description == "" and definition.constraints == []
    assert definition.custom_inputs_entrypoint is None
    full = valid(definition_data(op_type="gemm", hf_id="meta-llama/Llama-3-8B", description="a test"))
    assert (full.op_type, full.hf_id, full.description) == ("gemm", "meta-llama/Llama-3-8B", "a test")


def test_semantic_errors_raise_spec_error_with_every_issue(definition_data):
    data = definition_data(
        axes={"M": {"type": "var"}, "K": {"type": "expr", "expression": "Z"}},
        inputs={"x": {"shape": ["Q"], "dtype": "float32"}},
        outputs={"x": {"shape": ["M"], "dtype": "float32"}},
        reference="def run(a):\n    pass\n",
    )
    with pytest.raises(SpecError) as info:
        Definition.model_validate(data)
    fields = [i.field for i in info.value.issues]
    assert fields == ["axes.K.expression", "inputs.x.shape", "outputs.x", "reference"]
    for issue in info.value.issues:
        assert issue.message in str(info.value)


# --- reference checks ------------------------------------------------------------------------


TWO_INPUTS = {"a": {"shape": ["M"], "dtype": "float32"}, "b": {"shape": ["M"], "dtype": "float32"}}


@pytest.mark.parametrize(
    ("reference", "fragment"),
    [
        ("def run(a, b)\n    return a\n", "reference does not parse"),
        ("def run(a, b):\nreturn a\n", "reference does not parse"),
        ("def forward(a, b):\n    return a\n", "defines no top-level function run"),
        ("if True:\n    def run(a, b):\n        return a\n", "defines no top-level function run"),
        ("class K:\n    def run(a, b):\n        return a\n", "defines no top-level function run"),
        ("run = lambda a, b: a\n", "defines no top-level function run"),
        ("", "defines no top-level function run"),
        ("def run(b, a):\n    return a\n", "run() takes (b, a) but the inputs are (a, b), in this order"),
        ("def run(a):\n    return a\n", "run() takes (a) but the inputs are (a, b)"),
        ("def run(a, b, c):\n    return a\n", "run() takes (a, b, c)"),
        ("def run(a, b, c=1):\n    return a\n", "run() takes (a, b, c)"),
        ("def run(*args):\n    return args\n", "no *args, **kwargs or keyword-only"),
        ("def run(a, *rest):\n    return a\n", "no *args, **kwargs or keyword-only"),
        ("def run(a, b, **kwargs):\n    return a\n", "no *args, **kwargs or keyword-only"),
        ("def run(a, *, b):\n    return a\n", "no *args, **kwargs or keyword-only"),
    ],
)
def test_reference_checks(definition_data, reference, fragment):
    issue = one_issue(definition_data(inputs=TWO_INPUTS, reference=reference))
    assert issue.field == "reference"
    assert fragment in issue.message


def test_reference_syntax_error_gives_its_line(definition_data):
    issue = one_issue(definition_data(inputs=TWO_INPUTS, reference="import torch\n\ndef run(a, b):\n    return (a +\n"))
    assert issue.field == "reference" and issue.line == 4 and "does not parse" in issue.message


@pytest.mark.parametrize(
    "reference",
    [
        "def run(a, b):\n    return a + b\n",
        "def run(a, /, b):\n    return a + b\n",  # positional-only parameters are plain parameters
        "import torch\n\ndef helper(x):\n    return x\n\ndef run(a, b):\n    return helper(a) + b\n",
        "async def run(a, b):\n    return a\n",
    ],
)
def test_accepted_references(definition_data, reference):
    valid(definition_data(inputs=TWO_INPUTS, reference=reference))


def test_run_without_inputs(definition_data):
    valid(definition_data(axes={}, inputs={}, outputs={"y": {"shape": [4], "dtype": "float32"}}, reference="def run():\n    return 1\n"))


def test_custom_inputs_entrypoint(definition_data):
    reference = "def run(x):\n    return x\n\ndef make_inputs(axes, device):\n    return {}\n"
    assert valid(definition_data(reference=reference, custom_inputs_entrypoint="make_inputs")).custom_inputs_entrypoint == "make_inputs"
    issue = one_issue(definition_data(reference=reference, custom_inputs_entrypoint="build"))
    assert issue.field == "custom_inputs_entrypoint"
    assert "no top-level function build(axes, device)" in issue.message
    nested = "def run(x):\n    def build(axes, device):\n        return {}\n    return x\n"
    assert one_issue(definition_data(reference=nested, custom_inputs_entrypoint="build")).field == "custom_inputs_entrypoint"


# --- distributions ---------------------------------------------------------------------------


def with_distribution(definition_data, dtype: str, distribution: dict[str, Any], **extra: Any) -> dict[str, Any]:
    axes = extra.pop("axes", {"M": {"type": "var"}, "V": {"type": "var"}})
    return definition_data(
        axes=axes,
        inputs={"x": {"shape": ["M"], "dtype": dtype, "distribution": distribution}},
        **extra,
    )


@pytest.mark.parametrize(
    ("dtype", "distribution"),
    [
        ("float32", {"kind": "normal"}),
        ("float32", {"kind": "normal", "mean": 1, "std": 0.5}),
        ("bfloat16", {"kind": "uniform", "low": -1, "high": 1}),
        ("float8_e4m3fn", {"kind": "uniform"}),
        ("int64", {"kind": "integers", "high": "V"}),
        ("int32", {"kind": "integers", "low": 1, "high": "V + 1"}),
        ("uint8", {"kind": "integers", "low": 0, "high": 256}),
        ("bool", {"kind": "integers", "low": 0, "high": 2}),
        ("float32", {"kind": "normal", "mean": "M", "std": "cdiv(V, 2)"}),
    ],
)
def test_accepted_distributions(definition_data, dtype, distribution):
    definition = valid(with_distribution(definition_data, dtype, distribution))
    assert definition.inputs["x"].distribution.kind == distribution["kind"]


@pytest.mark.parametrize(
    ("dtype", "distribution", "field", "fragment"),
    [
        ("float32", {"kind": "integers", "high": 5}, "inputs.x.distribution.kind", "does not fit a float32 input; use 'uniform'"),
        ("float16", {"kind": "integers", "high": 5}, "inputs.x.distribution.kind", "does not fit a float16"),
        ("int32", {"kind": "normal"}, "inputs.x.distribution.kind", "does not fit a int32 input; use 'integers'"),
        ("bool", {"kind": "uniform"}, "inputs.x.distribution.kind", "does not fit a bool"),
        ("float32", {"kind": "normal", "low": -1, "high": 1}, "inputs.x.distribution.kind", "takes mean and std, not low/high"),
        ("float32", {"kind": "uniform", "mean": 0}, "inputs.x.distribution.kind", "takes low and high, not mean/std"),
        ("int64", {"kind": "integers", "low": 0}, "inputs.x.distribution.high", "needs 'high' (exclusive)"),
        ("float4_e2m1", {"kind": "uniform"}, "inputs.x.distribution.kind", "take no distribution"),
        ("int64", {"kind": "integers", "high": "V +"}, "inputs.x.distribution.high", "cannot parse"),
        ("float32", {"kind": "normal", "std": "V.real"}, "inputs.x.distribution.std", "not allowed"),
        ("int64", {"kind": "integers", "high": "vocab"}, "inputs.x.distribution", "distribution uses unknown axis vocab"),
    ],
)
def test_rejected_distributions(definition_data, dtype, distribution, field, fragment):
    issue = one_issue(with_distribution(definition_data, dtype, distribution))
    assert issue.field == field
    assert fragment in issue.message


def test_outputs_take_no_distribution(definition_data):
    data = definition_data(outputs={"y": {"shape": ["M"], "dtype": "float32", "distribution": {"kind": "normal"}}})
    issue = one_issue(data)
    assert issue.field == "outputs.y.distribution"


def test_distribution_resolve():
    normal = Distribution(kind="normal")
    assert normal.resolve({}) == {"mean": 0.0, "std": 1.0}
    assert Distribution(kind="normal", mean="M", std=2).resolve({"M": 5}) == {"mean": 5, "std": 2}
    assert Distribution(kind="uniform").resolve({}) == {"low": 0.0, "high": 1.0}
    assert Distribution(kind="uniform", low=-2.5, high=2.5).resolve({}) == {"low": -2.5, "high": 2.5}
    assert Distribution(kind="integers", high="V * 2").resolve({"V": 7}) == {"low": 0, "high": 14}
    assert Distribution(kind="integers", low="V / 2", high="V").resolve({"V": 8}) == {"low": 4, "high": 8}
    with pytest.raises(ValueError, match="std must be > 0"):
        Distribution(kind="normal", std=0).resolve({})
    with pytest.raises(ValueError, match="must be below high"):
        Distribution(kind="uniform", low=1, high=1).resolve({})
    with pytest.raises(ValueError, match="must be below high"):
        Distribution(kind="integers", high="V").resolve({"V": 0})
    with pytest.raises(ValueError, match="whole-number"):
        Distribution(kind="integers", high=2.5).resolve({})
    with pytest.raises(ValueError, match="whole-number"):
        Distribution(kind="integers", high="V / 2").resolve({"V": 7})
    with pytest.raises(ValueError, match="unknown axis"):
        Distribution(kind="integers", high="V").resolve({})
    assert Distribution(kind="integers", high="V + M").bound_names() == {"V", "M"}
    assert Distribution(kind="integers", high="V +").bound_names() == set()


def test_distribution_bounds_keep_their_json_type():
    distribution = Distribution.model_validate({"kind": "uniform", "low": -1, "high": 2.5})
    assert type(distribution.low) is int and type(distribution.high) is float
    assert distribution.to_json_dict() == {"kind": "uniform", "low": -1, "high": 2.5}


# --- resolve_axes / axes_for ------------------------------------------------------------------


@pytest.fixture
def three_axes(definition_data) -> Definition:
    return valid(
        definition_data(
            axes={
                "M": {"type": "var"},
                "N": {"type": "const", "value": 8},
                "K": {"type": "expr", "expression": "M * N"},
                "H": {"type": "expr", "expression": "M / 2"},
            },
            constraints=["M >= 2"],
        )
    )


def test_resolve_axes(three_axes):
    assert three_axes.resolve_axes({"M": 4}) == ({"M": 4, "N": 8, "K": 32, "H": 2}, [])
    assert three_axes.axes_for({"M": 4}) == {"M": 4, "N": 8, "K": 32, "H": 2}


def test_unbound_var_axis(three_axes):
    values, issues = three_axes.resolve_axes({})
    assert values == {"N": 8}
    assert [(i.field, i.message) for i in issues] == [("axes.M", "var axis 'M' is not bound")]


def test_unknown_axis_is_left_out(three_axes):
    # a quirk of public data: the workload names an axis the definition lacks; check_workload warns
    values, issues = three_axes.resolve_axes({"M": 4, "Q": 1})
    assert issues == []
    assert "Q" not in values and values["M"] == 4


def test_negative_axis(three_axes):
    _, issues = three_axes.resolve_axes({"M": -2})
    assert [(i.field, i.message) for i in issues] == [("axes.M", "axis 'M' must be >= 0, got -2")]


def test_zero_is_a_valid_size(definition_data):
    definition = valid(definition_data())
    assert definition.axes_for({"M": 0}) == {"M": 0}


def test_const_and_expr_axes_given_by_a_workload(three_axes):
    assert three_axes.resolve_axes({"M": 4, "N": 8}) == ({"M": 4, "N": 8, "K": 32, "H": 2}, [])
    assert three_axes.resolve_axes({"M": 4, "K": 32}) == ({"M": 4, "N": 8, "K": 32, "H": 2}, [])
    _, issues = three_axes.resolve_axes({"M": 4, "N": 16})
    assert [(i.field, i.message) for i in issues] == [("axes.N", "axis 'N' is const = 8; the workload may not set it to 16")]
    _, issues = three_axes.resolve_axes({"M": 4, "K": 31})
    assert [(i.field, i.message) for i in issues] == [("axes.K", "axis 'K' is expr = 32; the workload may not set it to 31")]


def test_expression_axis_must_give_a_whole_number(three_axes):
    _, issues = three_axes.resolve_axes({"M": 3})
    assert [i.field for i in issues] == ["axes.H"]
    assert "not an integer" in issues[0].message


def test_negative_expression_axis(definition_data):
    definition = valid(definition_data(axes={"M": {"type": "var"}, "P": {"type": "expr", "expression": "M - 4"}}))
    assert definition.axes_for({"M": 4})["P"] == 0
    _, issues = definition.resolve_axes({"M": 3})
    assert [(i.field, i.message) for i in issues] == [("axes.P", "expression axis 'P' evaluates to -1 < 0")]


def test_failing_constraint(three_axes):
    values, issues = three_axes.resolve_axes({"M": 0})
    assert values == {"M": 0, "N": 8, "K": 0, "H": 0}
    assert [(i.field, i.message) for i in issues] == [("axes", "constraint 'M >= 2' does not hold for {'M': 0}")]


def test_axes_for_raises_spec_error_with_the_issues(three_axes):
    with pytest.raises(SpecError) as info:
        three_axes.axes_for({"Q": 1})
    assert sorted(i.field for i in info.value.issues) == ["axes.M"]
    with pytest.raises(SpecError, match="does not hold"):
        three_axes.axes_for({"M": 0})


def test_dumping_after_resolving_axes_gives_back_the_input(three_axes, definition_data):
    three_axes.axes_for({"M": 4})  # fills the cached properties
    assert three_axes.var_axes == ["M"]
    data = definition_data(
        axes={
            "M": {"type": "var"},
            "N": {"type": "const", "value": 8},
            "K": {"type": "expr", "expression": "M * N"},
            "H": {"type": "expr", "expression": "M / 2"},
        },
        constraints=["M >= 2"],
    )
    assert three_axes.to_json_dict() == data


def test_tensor_spec_alone():
    spec = TensorSpec(shape=["M", 2], dtype="bfloat16")
    assert spec.dtype is DType.bfloat16
    assert spec.resolve_shape({"M": 3}) == (3, 2)
    with pytest.raises(KeyError):
        spec.resolve_shape({})


def test_expression_axis_calling_a_function_with_wrong_arity_is_an_issue(definition_data):
    _, issues = parse_model(Definition, definition_data(axes={"M": {"type": "var"}, "K": {"type": "expr", "expression": "cdiv(M)"}}))
    assert [(i.field, i.message) for i in issues] == [("axes.K.expression", "cdiv() takes 2 argument(s), got 1 in 'cdiv(M)'")]


@pytest.mark.parametrize("data", [[], "definition", 3, None])
def test_parse_model_needs_a_json_object(data, tmp_path):
    path = tmp_path / "definition.json"
    definition, issues = parse_model(Definition, data, path=path, line=2)
    assert definition is None
    assert [(i.path, i.line, i.field) for i in issues] == [(path, 2, None)]
    assert issues[0].message == f"expected a JSON object for Definition, got {type(data).__name__}"


def test_parse_model_locates_issues(definition_data, tmp_path):
    path = tmp_path / "definition.json"
    data = definition_data(inputs={"x": {"shape": ["Q"], "dtype": "float32"}})
    _, issues = parse_model(Definition, data, path=path, prefix="definition")
    assert [(i.path, i.line, i.field) for i in issues] == [(path, None, "definition.inputs.x.shape")]
    assert str(issues[0]) == f"{path}: definition.inputs.x.shape: {issues[0].message}"
    _, issues = parse_model(Definition, definition_data(inputs={"x": {"shape": ["M"], "dtype": "f32"}}), path=path, line=4, prefix="definition")
    assert [(i.path, i.line, i.field) for i in issues] == [(path, 4, "definition.inputs.x.dtype")]
