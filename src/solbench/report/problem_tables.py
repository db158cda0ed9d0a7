"""Rich renderings of problems and validation results for the CLI."""

from __future__ import annotations

import json

from rich.console import Group
from rich.table import Table
from rich.text import Text

from solbench.data.definition import ConstAxis, ExprAxis, TensorSpec
from solbench.data.loaders.loaded import Loaded
from solbench.data.problem import Problem
from solbench.data.workload import RandomInput, SafetensorsInput, ScalarInput


def validation_table(results: list[Loaded]) -> Table:
    table = Table(title="solbench validate", show_lines=False)
    for column in ("path", "kind", "name", "workloads", "result"):
        table.add_column(column, overflow="fold")
    for loaded in results:
        count = str(len(loaded.problem.workloads)) if loaded.problem else (str(len(loaded.traces)) + " traces" if loaded.traces else "")
        if loaded.errors:
            result = Text(f"invalid ({len(loaded.errors)} error{'s' * (len(loaded.errors) > 1)})", style="bold red")
        elif loaded.warnings:
            result = Text(f"valid ({len(loaded.warnings)} warning{'s' * (len(loaded.warnings) > 1)})", style="yellow")
        else:
            result = Text("valid", style="green")
        table.add_row(Text(str(loaded.path)), Text(loaded.kind), Text(loaded.name or ""), count, result)
    return table


PROBLEM_KINDS = {"problem", "kernelbench", "flashinfer"}


def subset_summaries(results: list[Loaded]) -> list[str]:
    """One line per dataset subset: how many of its problems (and other files) are valid."""
    groups: dict[str, list[Loaded]] = {}
    for loaded in results:
        if loaded.kind in PROBLEM_KINDS:
            groups.setdefault(loaded.subset or "(top level)", []).append(loaded)
    if set(groups) == {"(top level)"}:
        return []
    lines = []
    for subset, members in sorted(groups.items()):
        valid = [m for m in members if m.ok]
        workloads = sum(len(m.problem.workloads) for m in valid if m.problem is not None)
        warned = sum(1 for m in valid if m.warnings)
        note = f"; {warned} with warnings" if warned else ""
        lines.append(f"{subset}: {len(valid)} of {len(members)} valid ({workloads} workloads){note}")
    return lines


def refusal_line(loaded: Loaded) -> str:
    """One line for something that did not load: where, and its first error (missing blobs counted as one)."""
    from solbench.data.problem import missing_blobs_in_one

    errors = missing_blobs_in_one(list(loaded.errors))
    more = f" (+{len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return f"refused: {errors[0]}{more}" if errors else f"refused: {loaded.path}"


def problems_summary(problems: list[Problem]) -> Table:
    table = Table(title=f"{len(problems)} problems")
    for column in ("name", "op_type", "model", "axes (var)", "inputs", "outputs", "workloads"):
        table.add_column(column, overflow="fold")
    for problem in problems:
        definition = problem.definition
        table.add_row(*_plain(
            definition.name,
            definition.op_type or "",
            definition.hf_id or "",
            ", ".join(definition.var_axes),
            ", ".join(definition.inputs),
            ", ".join(definition.outputs),
            str(len(problem.workloads)),
        ))
    return table


def problem_details(problem: Problem) -> Group:
    definition = problem.definition
    header = Text.assemble((definition.name, "bold"), f"  ({problem.kind}: {problem.source})")
    about = [f"op_type: {definition.op_type}" if definition.op_type else "", f"model: {definition.hf_id}" if definition.hf_id else ""]
    parts: list = [header]
    if definition.description:
        parts.append(Text(definition.description))
    if any(about):
        parts.append(Text("  ".join(a for a in about if a)))
    axes = Table(title="axes")
    for column in ("axis", "type", "value"):
        axes.add_column(column)
    for name, axis in definition.axes.items():
        value = str(axis.value) if isinstance(axis, ConstAxis) else axis.expression if isinstance(axis, ExprAxis) else "set per workload"
        axes.add_row(*_plain(name, axis.type, value))
    for constraint in definition.constraints:
        axes.add_row(*_plain("", "constraint", constraint))
    tensors = Table(title="inputs and outputs")
    for column in ("", "name", "shape", "dtype", "distribution"):
        tensors.add_column(column, overflow="fold")
    for role, group in (("in", definition.inputs), ("out", definition.outputs)):
        for name, spec in group.items():
            tensors.add_row(*_plain(role, name), _shape(spec), *_plain(spec.dtype.value, _distribution(spec)))
    workloads = Table(title=f"workloads ({len(problem.workloads)})")
    for column in ("uuid", "axes", "inputs", "tolerance (atol / rtol / ratio)"):
        workloads.add_column(column, overflow="fold")
    for workload in problem.workloads:
        tolerance = workload.effective_tolerance
        workloads.add_row(*_plain(
            workload.uuid,
            " ".join(f"{k}={v}" for k, v in workload.axes.items()),
            _input_kinds(workload),
            f"{tolerance.max_atol:g} / {tolerance.max_rtol:g} / {tolerance.required_matched_ratio:g}",
        ))
    if definition.axes:
        parts.append(axes)
    parts += [tensors, workloads]
    return Group(*parts)


def _plain(*cells: str) -> list[Text]:
    """Cells as Text: user text ("[num_tokens, hidden_size]", a path with brackets) is never read as rich markup."""
    return [Text(cell) for cell in cells]


def _shape(spec: TensorSpec) -> Text:
    return Text("scalar" if spec.shape is None else "[" + ", ".join(str(d) for d in spec.shape) + "]")  # Text: never read as markup


def _distribution(spec: TensorSpec) -> str:
    if spec.distribution is None:
        return ""
    return json.dumps(spec.distribution.to_json_dict())


def _input_kinds(workload) -> str:
    kinds = []
    for name, spec in workload.inputs.items():
        if isinstance(spec, ScalarInput):
            kinds.append(f"{name}={spec.value}")
        elif isinstance(spec, SafetensorsInput):
            kinds.append(f"{name}:file")
        elif isinstance(spec, RandomInput):
            continue
        else:
            kinds.append(f"{name}:{spec.type}")
    return " ".join(kinds) or "random"
