"""Problem: a definition with its workloads, and the checks that tie each workload to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from solbench.data.definition import Definition
from solbench.data.dtypes import DType, storage_shape
from solbench.data.errors import Issue, SpecError
from solbench.data.safetensors_header import read_header
from solbench.data.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Workload


@dataclass
class Problem:
    definition: Definition
    workloads: list[Workload]
    root: Path | None = None  # safetensors paths in workloads are relative to this folder
    source: Path | None = None  # the folder or file it was loaded from
    kind: str = "problem"  # problem | kernelbench | flashinfer
    workload_lines: list[int] = field(default_factory=list)
    reference_file: Path | None = None  # set when the reference was read from reference.py
    subset: str | None = None  # e.g. "L1" for a problem in a dataset's subset folder
    input_profile: str | None = None  # how undeclared random inputs are drawn; None: chosen by origin (spec.profiles)
    synthesize_missing_blobs: bool = False  # draw safetensors inputs whose file is absent (said in every trace)

    @property
    def name(self) -> str:
        return self.definition.name

    def workload(self, uuid: str) -> Workload:
        """The workload with this uuid, or the only one it is a prefix of (6 characters or more)."""
        for workload in self.workloads:
            if workload.uuid == uuid:
                return workload
        matches = [w for w in self.workloads if len(uuid) >= 6 and w.uuid.startswith(uuid)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise KeyError(f"workload prefix {uuid!r} of problem {self.name} is ambiguous: {', '.join(w.uuid for w in matches)}")
        raise KeyError(f"problem {self.name} has no workload {uuid!r}")

    def axes(self, workload: Workload) -> dict[str, int]:
        return self.definition.axes_for(workload.axes)


def check_workload(definition: Definition, workload: Workload, root: Path | None, synthesize_missing: bool = False) -> list[Issue]:
    """Every issue that makes this workload unusable with this definition (fields relative to it),
    and warnings about what is ignored or made up (a missing blob, with synthesize_missing)."""
    axes, issues = definition.resolve_axes(workload.axes)
    for name in definition.inputs.keys() - workload.inputs.keys():
        issues.append(Issue(f"input {name!r} of the definition is not described", field=f"inputs.{name}"))
    if issues:
        return issues
    # names the definition does not have are a quirk of data in the wild: ignored, with a warning
    for name in sorted(workload.axes.keys() - definition.axes.keys()):
        issues.append(Issue(f"unknown axis {name!r} ignored (the definition's axes: {', '.join(definition.axes) or 'none'})",
                            field=f"axes.{name}", severity="warning"))
    for name in sorted(workload.inputs.keys() - definition.inputs.keys()):
        issues.append(Issue(f"unknown input {name!r} ignored (the definition's inputs: {', '.join(definition.inputs)})",
                            field=f"inputs.{name}", severity="warning"))
    for name, tensor in definition.outputs.items():
        issues += _packed_shape_issues(tensor.dtype, tensor.resolve_shape(axes), f"outputs.{name}", "output")
    for name, spec in workload.inputs.items():
        declared = definition.inputs.get(name)
        if declared is None:
            continue
        field_name = f"inputs.{name}"
        shape = declared.resolve_shape(axes)
        if isinstance(spec, ScalarInput):
            issues += _scalar_issues(declared.dtype, declared.shape, spec.value, field_name)
            continue
        if declared.dtype.is_fp4 and declared.shape is None or declared.dtype.is_packed and declared.shape == []:
            what = "value cannot be a Python scalar" if declared.shape is None else "tensor cannot be 0-d"
            issues.append(Issue(f"a {declared.dtype.value} {what}: it packs two values per byte", field=field_name))
            continue
        if declared.shape is None and isinstance(spec, SafetensorsInput):
            issues.append(Issue(f"input {name!r} is a Python scalar (shape null); describe it as scalar, random or custom", field=field_name))
            continue
        issues += _packed_shape_issues(declared.dtype, shape, field_name, "input")
        if isinstance(spec, RandomInput):
            distribution = spec.distribution or declared.distribution
            if distribution is not None:
                found = [i.located(prefix=f"{field_name}.distribution") for i in distribution.issues_for(declared.dtype)]
                problem = None if found else distribution.range_issue(declared.dtype, axes)
                issues += found + ([Issue(problem, field=f"{field_name}.distribution")] if problem else [])
        elif isinstance(spec, CustomInput):
            if definition.custom_inputs_entrypoint is None:
                issues.append(Issue("a custom input needs custom_inputs_entrypoint in the definition", field=field_name))
        elif isinstance(spec, SafetensorsInput):
            issues += _safetensors_issues(spec, declared.dtype, shape, root, field_name, synthesize_missing)
    return issues


def check_problem(problem: Problem) -> list[Issue]:
    """Issues of all workloads (located at their JSONL lines) plus duplicate uuids. A warning that
    repeats on many lines (a quirk of the whole file) is given once, at its first line, with a count."""
    issues: list[Issue] = []
    seen: dict[str, int] = {}
    for index, workload in enumerate(problem.workloads):
        line = problem.workload_lines[index] if index < len(problem.workload_lines) else None
        found = check_workload(problem.definition, workload, problem.root, problem.synthesize_missing_blobs)
        if workload.uuid in seen:
            found.append(Issue(f"uuid {workload.uuid!r} repeats workload {seen[workload.uuid] + 1}", field="uuid"))
        seen.setdefault(workload.uuid, index)
        issues += [i.located(line=line) for i in found]
    return once_per_file(issues)


def once_per_file(issues: list[Issue]) -> list[Issue]:
    """Warnings with the same message and field kept once (the first), saying on how many lines they
    were seen; errors all kept."""
    counts: dict[tuple[str, str | None], int] = {}
    for issue in issues:
        if issue.severity == "warning":
            counts[(issue.message, issue.field)] = counts.get((issue.message, issue.field), 0) + 1
    kept: list[Issue] = []
    shown: set[tuple[str, str | None]] = set()
    for issue in issues:
        key = (issue.message, issue.field)
        if issue.severity != "warning":
            kept.append(issue)
        elif key not in shown:
            shown.add(key)
            more = counts[key] - 1
            message = f"{issue.message} (and on {more} more line{'s' if more > 1 else ''})" if more else issue.message
            kept.append(Issue(message, issue.path, issue.line, issue.field, issue.severity))
    return kept


def _scalar_issues(dtype: DType, shape: list | None, value: object, field: str) -> list[Issue]:
    if shape:  # a non-empty shape: a real tensor cannot come from one value
        return [Issue(f"a scalar value cannot fill a tensor of shape {shape}; use random, safetensors or custom", field=field)]
    if dtype.is_fp4:
        return [Issue(f"a {dtype.value} value cannot be a scalar: it packs two values per byte", field=field)]
    if dtype == DType.bool and not isinstance(value, bool):
        return [Issue(f"a bool input needs true or false, got {value!r}", field=f"{field}.value")]
    if not dtype.is_floating and dtype != DType.bool and (isinstance(value, bool) or not isinstance(value, int)):
        return [Issue(f"an {dtype.value} input needs an integer value, got {value!r}", field=f"{field}.value")]
    if dtype.is_floating and isinstance(value, bool):
        return [Issue(f"a {dtype.value} input needs a number, got {value!r}", field=f"{field}.value")]
    return []


def _packed_shape_issues(dtype: DType, shape: tuple[int, ...], field: str, what: str) -> list[Issue]:
    if not dtype.is_packed:
        return []
    try:
        storage_shape(dtype, shape)
    except ValueError as exc:
        return [Issue(f"{what} {exc}", field=field)]
    return []


MISSING_BLOB = "does not exist (pass --synthesize-missing-blobs to draw such inputs from the definition instead)"


def missing_blobs_in_one(issues: list[Issue]) -> list[Issue]:
    """A problem's issues with its missing safetensors files said once: how many files, on how many
    workload lines, the first of them and the flag (a published set without its blobs has one per input
    per workload); the other issues as they are."""
    missing = [issue for issue in issues if issue.message.endswith(MISSING_BLOB)]
    if len(missing) < 2:
        return issues
    first = missing[0]
    lines = len({issue.line for issue in missing})
    where = f"{first.path}:{first.line}" if first.line is not None else str(first.path)
    summary = Issue(f"{len(missing)} safetensors files named by {lines} workload line{'s' if lines != 1 else ''} do not exist "
                    f"(the first: {where}: {first.field}); pass --synthesize-missing-blobs to draw such inputs from the definition instead",
                    path=first.path, field="inputs")
    return [summary, *(issue for issue in issues if not issue.message.endswith(MISSING_BLOB))]


def _safetensors_issues(spec: SafetensorsInput, dtype: DType, shape: tuple[int, ...], root: Path | None, field: str,
                        synthesize_missing: bool = False) -> list[Issue]:
    path = Path(spec.path)
    if not path.is_absolute():
        if root is None:
            return [Issue(f"relative path {spec.path!r} needs a problem folder to resolve against", field=f"{field}.path")]
        path = root / path
    try:
        header = read_header(path)
    except FileNotFoundError:
        if synthesize_missing:
            return [Issue(f"safetensors file {str(path)!r} does not exist; the input is synthesized from the definition "
                          "(--synthesize-missing-blobs)", field=f"{field}.path", severity="warning")]
        return [Issue(f"safetensors file {str(path)!r} {MISSING_BLOB}", field=f"{field}.path")]
    except (OSError, ValueError, KeyError) as exc:
        return [Issue(f"cannot read safetensors file {str(path)!r}: {exc}", field=f"{field}.path")]
    if spec.tensor_key not in header:
        keys = ", ".join(sorted(header)[:8])
        return [Issue(f"{str(path)!r} holds no tensor {spec.tensor_key!r} (it has: {keys})", field=f"{field}.tensor_key")]
    stored_dtype, stored_shape = header[spec.tensor_key]
    expected_dtype, expected_shape = dtype, shape
    if dtype.is_fp4:  # safetensors' F4 has the logical shape; bytes (U8) the packed one, two values per byte
        packed = storage_shape(dtype, shape)
        logical = shape if dtype == DType.float4_e2m1 else (*shape[:-1], shape[-1] * 2) if shape else shape
        expected_dtype, expected_shape = (DType.float4_e2m1, logical) if stored_dtype == DType.float4_e2m1 else (DType.uint8, packed)
    stored_name = stored_dtype.value if isinstance(stored_dtype, DType) else stored_dtype
    if stored_dtype != expected_dtype or tuple(stored_shape) != tuple(expected_shape):
        return [
            Issue(
                f"tensor {spec.tensor_key!r} is {stored_name}{list(stored_shape)}, the definition needs {expected_dtype.value}{list(expected_shape)}",
                field=field,
            )
        ]
    return []


def require_valid(problem: Problem) -> Problem:
    issues = check_problem(problem)
    if issues:
        raise SpecError(issues, path=problem.source)
    return problem
