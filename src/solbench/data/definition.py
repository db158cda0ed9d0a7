"""Definition: what a problem computes (axes, inputs, outputs, reference)."""

from __future__ import annotations

import ast
import keyword
from functools import cached_property
from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, StrictInt, Tag, field_validator, model_validator

from solbench.data.base import SpecModel
from solbench.data.dtypes import DType
from solbench.data.errors import Issue, SpecError
from solbench.data.expressions import FUNCTION_NAMES, ExpressionError, evaluate_integer, parse_expression

NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"


def tagged_by_type(value: Any) -> str | None:
    """Discriminator of the `type`-tagged unions: tags read "type=<value>"."""
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return f"type={kind}" if isinstance(kind, str) else None


class ConstAxis(SpecModel):
    type: Literal["const"]
    value: Annotated[StrictInt, Field(ge=0)]


class VarAxis(SpecModel):
    type: Literal["var"]


class ExprAxis(SpecModel):
    type: Literal["expr"]
    expression: str

    @field_validator("expression")
    @classmethod
    def _parses(cls, source: str) -> str:
        parse_expression(source)
        return source


Axis = Annotated[
    Union[
        Annotated[ConstAxis, Tag("type=const")],
        Annotated[VarAxis, Tag("type=var")],
        Annotated[ExprAxis, Tag("type=expr")],
    ],
    Discriminator(
        tagged_by_type,
        custom_error_type="axis_type",
        custom_error_message="expected an axis {type: const, value} | {type: var} | {type: expr, expression}",
    ),
]

Bound = float | int | str  # a number, or an axis expression such as "vocab_size" or "S + 1"


class Distribution(SpecModel):
    """A declared input distribution; without one, inputs are drawn from the plain default."""

    kind: Literal["normal", "uniform", "integers"]
    mean: Bound | None = None
    std: Bound | None = None
    low: Bound | None = None
    high: Bound | None = None

    def issues_for(self, dtype: DType) -> list[Issue]:
        found = []
        if dtype.is_fp4:
            return [Issue(f"{dtype.value} inputs are drawn by the input profile; they take no distribution", field="kind")]
        if self.kind == "integers" and dtype.is_floating:
            found.append(Issue(f"kind 'integers' does not fit a {dtype.value} input; use 'uniform'", field="kind"))
        if self.kind in {"normal", "uniform"} and not dtype.is_floating:
            found.append(Issue(f"kind {self.kind!r} does not fit a {dtype.value} input; use 'integers'", field="kind"))
        if self.kind == "normal" and (self.low is not None or self.high is not None):
            found.append(Issue("a normal distribution takes mean and std, not low/high", field="kind"))
        if self.kind != "normal" and (self.mean is not None or self.std is not None):
            found.append(Issue(f"a {self.kind} distribution takes low and high, not mean/std", field="kind"))
        if self.kind == "integers" and self.high is None:
            found.append(Issue("an integers distribution needs 'high' (exclusive)", field="high"))
        for name in ("mean", "std", "low", "high"):
            bound = getattr(self, name)
            if isinstance(bound, str):
                try:
                    parse_expression(bound)
                except ExpressionError as exc:
                    found.append(Issue(str(exc), field=name))
        return found

    def bound_names(self) -> set[str]:
        names: set[str] = set()
        for bound in (self.mean, self.std, self.low, self.high):
            if isinstance(bound, str):
                try:
                    names |= parse_expression(bound).names
                except ExpressionError:
                    pass
        return names

    def resolve(self, axes: dict[str, int]) -> dict[str, float]:
        """Numeric parameters for these axis values; checks low < high and std > 0."""
        values: dict[str, float] = {}
        for name in ("mean", "std", "low", "high"):
            bound = getattr(self, name)
            if isinstance(bound, str):
                result = parse_expression(bound).evaluate(axes)
                values[name] = result if isinstance(result, int) and not isinstance(result, bool) else float(result)
            elif bound is not None:
                values[name] = bound
        if self.kind == "normal":
            values.setdefault("mean", 0.0)
            values.setdefault("std", 1.0)
            if values["std"] <= 0:
                raise ValueError(f"std must be > 0, got {values['std']}")
        else:
            values.setdefault("low", 0.0 if self.kind == "uniform" else 0)
            values.setdefault("high", 1.0)
            if values["low"] >= values["high"]:
                raise ValueError(f"low ({values['low']}) must be below high ({values['high']})")
            if self.kind == "integers" and not all(float(values[k]).is_integer() for k in ("low", "high")):
                raise ValueError("an integers distribution needs whole-number low and high")
        return values

    def range_issue(self, dtype: DType, axes: dict[str, int]) -> str | None:
        """Why these parameters cannot be drawn for this dtype at these axis values, if they cannot."""
        try:
            values = self.resolve(axes)
        except (ValueError, ExpressionError) as exc:
            return str(exc)
        if self.kind == "integers" and dtype != DType.bool:
            least, most = dtype.integer_range
            if values["low"] < least or values["high"] - 1 > most:
                return f"integers in [{values['low']:g}, {values['high']:g}) do not fit {dtype.value} ({least}..{most})"
        return None


class TensorSpec(SpecModel):
    """An input or output: shape (axis names / integer literals; null for a Python scalar) and dtype."""

    shape: list[Annotated[StrictInt, Field(ge=0)] | str] | None
    dtype: DType
    distribution: Distribution | None = None

    @property
    def is_scalar(self) -> bool:
        return self.shape is None

    @property
    def dims(self) -> list[int | str]:
        """The shape with integer literals as ints (public data writes some as strings of digits,
        `["1", "hidden_size"]`) and axis names as str; the file keeps its own spelling."""
        return [literal_dim(dim) for dim in self.shape or []]

    @property
    def axis_names(self) -> list[str]:
        return [dim for dim in self.dims if isinstance(dim, str)]

    def resolve_shape(self, axes: dict[str, int]) -> tuple[int, ...]:
        if self.shape is None:
            return ()
        return tuple(dim if isinstance(dim, int) else axes[dim] for dim in self.dims)


def literal_dim(dim: int | str) -> int | str:
    """A shape entry: an int, a string of digits (that int), or an axis name."""
    return int(dim) if isinstance(dim, str) and dim.isascii() and dim.isdigit() else dim


class Definition(SpecModel):
    name: str = Field(pattern=NAME_PATTERN)
    op_type: str | None = None
    description: str = ""
    hf_id: str | None = None
    axes: dict[str, Axis] = Field(default_factory=dict)
    constraints: list[str] = Field(default_factory=list)
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec] = Field(min_length=1)
    reference: str
    custom_inputs_entrypoint: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Definition:
        issues = self.semantic_issues()
        if issues:
            raise SpecError(issues)
        return self

    # --- checks -----------------------------------------------------------------------------

    def semantic_issues(self) -> list[Issue]:
        """Everything pydantic's types cannot see: names, references between fields, the reference."""
        issues: list[Issue] = []
        for axis in self.axes:
            if not axis.isidentifier() or keyword.iskeyword(axis):
                issues.append(Issue(f"axis name {axis!r} is not an identifier", field=f"axes.{axis}"))
            elif axis in FUNCTION_NAMES:
                issues.append(Issue(f"axis name {axis!r} is taken by an expression function", field=f"axes.{axis}"))
        issues += self._expression_axis_issues()
        for index, constraint in enumerate(self.constraints):
            try:
                unknown = parse_expression(constraint).names - self.axes.keys()
            except ExpressionError as exc:
                issues.append(Issue(str(exc), field=f"constraints.{index}"))
                continue
            if unknown:
                issues.append(Issue(f"constraint {constraint!r} uses unknown axis {', '.join(sorted(unknown))}", field=f"constraints.{index}"))
        for group in ("inputs", "outputs"):
            for name, tensor in getattr(self, group).items():
                field = f"{group}.{name}"
                if not name.isidentifier() or keyword.iskeyword(name):
                    issues.append(Issue(f"{name!r} is not a Python identifier, so it cannot be a parameter of run()", field=field))
                for dim in tensor.axis_names:
                    if dim not in self.axes:
                        issues.append(Issue(f"shape uses unknown axis {dim!r} (declared axes: {', '.join(self.axes) or 'none'})", field=f"{field}.shape"))
                if tensor.distribution is not None:
                    if group == "outputs":
                        issues.append(Issue("outputs are computed, they take no distribution", field=f"{field}.distribution"))
                    issues += [i.located(prefix=f"{field}.distribution") for i in tensor.distribution.issues_for(tensor.dtype)]
                    unknown = tensor.distribution.bound_names() - self.axes.keys()
                    if unknown:
                        issues.append(Issue(f"distribution uses unknown axis {', '.join(sorted(unknown))}", field=f"{field}.distribution"))
        for name in self.inputs.keys() & self.outputs.keys():
            issues.append(Issue(f"{name!r} is both an input and an output", field=f"outputs.{name}"))
        issues += self._reference_issues()
        return issues

    def _expression_axis_issues(self) -> list[Issue]:
        issues = []
        for name, axis in self.axes.items():
            if isinstance(axis, ExprAxis):
                unknown = parse_expression(axis.expression).names - self.axes.keys()
                if unknown:
                    issues.append(Issue(f"expression uses unknown axis {', '.join(sorted(unknown))}", field=f"axes.{name}.expression"))
        if not issues:
            try:
                self.axis_order
            except SpecError as exc:
                issues += exc.issues
        return issues

    def _reference_issues(self) -> list[Issue]:
        try:
            tree = ast.parse(self.reference)
        except SyntaxError as exc:
            return [Issue(f"reference does not parse: {exc.msg}", line=exc.lineno, field="reference")]
        functions = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        issues = []
        run = functions.get("run")
        if run is None:
            issues.append(Issue("reference defines no top-level function run(...)", field="reference"))
        else:
            args = run.args
            params = [a.arg for a in args.posonlyargs + args.args]
            expected = list(self.inputs)
            if args.vararg or args.kwarg or args.kwonlyargs:
                issues.append(Issue("run() must take exactly the inputs as plain parameters (no *args, **kwargs or keyword-only)", line=run.lineno, field="reference"))
            elif params != expected:
                issues.append(Issue(f"run() takes ({', '.join(params)}) but the inputs are ({', '.join(expected)}), in this order", line=run.lineno, field="reference"))
        entry = self.custom_inputs_entrypoint
        if entry is not None and entry not in functions:
            issues.append(Issue(f"reference defines no top-level function {entry}(axes, device) named by custom_inputs_entrypoint", field="custom_inputs_entrypoint"))
        return issues

    # --- axes -------------------------------------------------------------------------------

    @cached_property
    def axis_order(self) -> list[str]:
        """Expression axes in an order where each comes after the axes it uses."""
        pending = {n: parse_expression(a.expression).names for n, a in self.axes.items() if isinstance(a, ExprAxis)}
        order: list[str] = []
        while pending:
            ready = [n for n, uses in pending.items() if not (uses & pending.keys())]
            if not ready:
                cycle = ", ".join(sorted(pending))
                raise SpecError(f"expression axes depend on each other in a cycle: {cycle}", field="axes")
            for name in ready:
                order.append(name)
                del pending[name]
        return order

    @cached_property
    def var_axes(self) -> list[str]:
        return [n for n, a in self.axes.items() if isinstance(a, VarAxis)]

    def resolve_axes(self, given: dict[str, int]) -> tuple[dict[str, int], list[Issue]]:
        """All axis values for a workload's var axes, with an issue per unbound or bad axis (axes
        the definition does not have are left out)."""
        issues: list[Issue] = []
        values: dict[str, int] = {}
        for name, axis in self.axes.items():
            if isinstance(axis, ConstAxis):
                values[name] = axis.value
            elif isinstance(axis, VarAxis):
                if name not in given:
                    issues.append(Issue(f"var axis {name!r} is not bound", field=f"axes.{name}"))
                elif given[name] < 0:
                    issues.append(Issue(f"axis {name!r} must be >= 0, got {given[name]}", field=f"axes.{name}"))
                else:
                    values[name] = given[name]
        # an axis the definition does not have is ignored here (check_workload warns about it)
        if issues:
            return values, issues
        for name in self.axis_order:
            try:
                value = evaluate_integer(self.axes[name].expression, values)  # type: ignore[union-attr]
            except ExpressionError as exc:
                issues.append(Issue(str(exc), field=f"axes.{name}"))
                return values, issues
            if value < 0:
                issues.append(Issue(f"expression axis {name!r} evaluates to {value} < 0", field=f"axes.{name}"))
            values[name] = value
        for name, value in given.items():
            if name in self.axes and not isinstance(self.axes[name], VarAxis) and values.get(name) != value:
                issues.append(Issue(f"axis {name!r} is {self.axes[name].type} = {values.get(name)}; the workload may not set it to {value}", field=f"axes.{name}"))
        for index, constraint in enumerate(self.constraints):
            try:
                holds = parse_expression(constraint).evaluate(values)
            except ExpressionError as exc:
                issues.append(Issue(str(exc), field=f"constraints.{index}"))
                continue
            if not holds:
                used = {n: values[n] for n in sorted(parse_expression(constraint).names)}
                issues.append(Issue(f"constraint {constraint!r} does not hold for {used}", field="axes"))
        return values, issues

    def axes_for(self, given: dict[str, int]) -> dict[str, int]:
        values, issues = self.resolve_axes(given)
        if issues:
            raise SpecError(issues)
        return values
