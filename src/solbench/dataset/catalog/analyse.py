"""One problem's row: the facts its definition gives, plus one SOL analysis of its representative
workload (run in a worker process by characterise; everything here must pickle)."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from solbench.data.dtypes import DType
from solbench.data.problem import Problem
from solbench.data.workload import CustomInput, Workload
from solbench.dataset.catalog.fingerprint import concrete_var_values, graph_fingerprint
from solbench.dataset.catalog.row import ProblemRow, SolFacts
from solbench.dataset.catalog.rules import category_of, direction_of, domain_of

WORKLOAD_CHOICES = ("median", "smallest", "largest")
# Ops that move or relabel data without computing: a cast or a copy is not a second op of a fusion.
TRIVIAL_OPS = frozenset({"_to_copy", "copy_", "copy", "clone", "contiguous", "detach", "alias", "lift_fresh", "lift_fresh_copy", "fill_",
                         "fill", "zero_", "zeros", "zeros_like", "empty", "empty_like", "empty_strided", "new_empty", "new_zeros", "full",
                         "full_like", "ones", "ones_like", "scalar_tensor", "arange", "_local_scalar_dense", "expand_copy", "to"})


def input_bytes(problem: Problem, workload: Workload) -> dict[DType, int]:
    """Bytes of each dtype among the tensor inputs of a workload."""
    axes = problem.axes(workload)
    found: Counter[DType] = Counter()
    for spec in problem.definition.inputs.values():
        if spec.shape is not None:
            found[spec.dtype] += spec.dtype.storage_bytes(math.prod(spec.resolve_shape(axes)))
    return dict(found)


def representative(problem: Problem, choice: str = "median") -> Workload:
    """The workload that stands for the problem: by total input bytes (ties by uuid), the lower median, the smallest or the largest."""
    ordered = sorted(problem.workloads, key=lambda w: (sum(input_bytes(problem, w).values()), w.uuid))
    if choice == "smallest":
        return ordered[0]
    if choice == "largest":
        return ordered[-1]
    return ordered[(len(ordered) - 1) // 2]


def generic_workload(problem: Problem) -> Workload:
    """The workload whose capture the fingerprint is made of: the smallest whose var axes are all 2 or more (an
    axis of 0 or 1 is captured as a number, not a symbol, which would make twins of one problem differ), else the median."""
    definition = problem.definition
    for workload in sorted(problem.workloads, key=lambda w: (sum(input_bytes(problem, w).values()), w.uuid)):
        axes = problem.axes(workload)
        if all(axes.get(name, 0) >= 2 for name in definition.axes if definition.axes[name].type != "const"):
            return workload
    return representative(problem, "median")


def dominant_dtype(problem: Problem, workload: Workload) -> str:
    """The dtype of most input bytes (ties: the narrower, then by name); 'none' without tensor inputs."""
    found = input_bytes(problem, workload)
    if not found:
        return "none"
    return max(found.items(), key=lambda item: (item[1], -item[0].bits, item[0].value))[0].value


def digest(problem: Problem) -> str:
    """sha256 over the problem's files (definition, workloads, reference.py), or its definition's JSON."""
    source = problem.source
    folder = source if source is not None and source.is_dir() else None
    hasher = hashlib.sha256()
    if folder is not None:
        for name in ("definition.json", "workload.jsonl", "reference.py"):
            path = folder / name
            if path.is_file():
                hasher.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    else:
        hasher.update(problem.definition.model_dump_json().encode())
        for workload in problem.workloads:
            hasher.update(workload.model_dump_json().encode())
    return hasher.hexdigest()


def relative_path(problem: Problem, folder: Path) -> str:
    """Where the problem is, relative to the dataset folder (posix; '.' for the folder itself)."""
    source = (problem.source or folder).resolve()
    root = folder.resolve()
    if source == root:
        return "."
    return source.relative_to(root).as_posix() if source.is_relative_to(root) else source.as_posix()


def static_row(problem: Problem, root: Path, choice: str) -> dict[str, Any]:
    """Everything but the capture's facts (category and direction are refined by the capture later)."""
    definition = problem.definition
    tags = (definition.model_extra or {}).get("tags")
    tags = [str(t) for t in tags] if isinstance(tags, list) else []
    workload = representative(problem, choice)
    dtypes = [spec.dtype for spec in (*definition.inputs.values(), *definition.outputs.values())]
    fp4 = any(d.is_fp4 for d in dtypes)
    fp8 = any(d in (DType.float8_e4m3fn, DType.float8_e5m2) for d in dtypes)
    path = relative_path(problem, root)
    category, category_source = category_of(definition.op_type, definition.name, None)
    direction, direction_source = direction_of(definition.name, definition.op_type, tags, definition.description,
                                               list(definition.outputs), None)
    domain, domain_source = domain_of(definition.hf_id, definition.name, definition.description)
    custom = definition.custom_inputs_entrypoint is not None or any(
        isinstance(spec, CustomInput) for w in problem.workloads for spec in w.inputs.values())
    return dict(
        name=definition.name, path=path, subset=problem.subset, digest=digest(problem), op_type=definition.op_type, hf_id=definition.hf_id,
        category=category, category_source=category_source, domain=domain, domain_source=domain_source,
        precision=dominant_dtype(problem, workload), fp8=fp8, fp4=fp4, quantised="fp4" if fp4 else "fp8" if fp8 else "none",
        direction=direction, direction_source=direction_source, workloads=len(problem.workloads), var_axes=len(definition.var_axes),
        custom_inputs=custom,
    ), tags


def characterise_problem(problem: Problem, root: Path, hardware: Any, choice: str = "median", policy: str = "auto") -> ProblemRow:
    """The row of one problem; a failed analysis is recorded in `error`, never raised."""
    from solbench.sol.analysis import analyze, finish, problem_captures
    from solbench.sol.api import _forget_fake_dispatch_cache, policy_for
    from solbench.sol.pricing import graph_totals

    fields, tags = static_row(problem, root, choice)
    workload = representative(problem, choice)
    try:
        captures = problem_captures(problem)
        policy_in_force = policy_for(problem, policy)
        # The smallest workload first, as solbench sol does: its capture is the cheapest, serves the others
        # when symbolic, and finds a loop axis before a large workload is unrolled.
        smallest = representative(problem, "smallest")
        graph, seen = captures.graph(smallest), smallest
        small_graph = graph
        if captures.loop_axis is not None:  # a loop count: the analysis extrapolates along it, as solbench sol does
            result = analyze(problem, workload, hardware, policy_in_force, captures)
        else:
            graph, seen = captures.graph(workload), workload
            result = finish(graph_totals(graph, hardware, policy_in_force), problem.name, workload.uuid, hardware, policy_in_force)
        # a loop is unrolled in a capture: the smallest loop count is the cheapest structure to fingerprint
        generic = smallest if captures.loop_axis is not None else generic_workload(problem)
        symbolic = _symbolic_graph(captures, problem, generic)
        if symbolic is None:  # no capture made so far serves it: capture it (or reuse the graph of the smallest or the representative)
            known = {smallest.uuid: small_graph, seen.uuid: graph}
            shape_graph = known[generic.uuid] if generic.uuid in known else captures.graph(generic)
            symbolic = _symbolic_graph(captures, problem, generic)
        fingerprint = graph_fingerprint(symbolic) if symbolic is not None else \
            graph_fingerprint(shape_graph, concrete_var_values(problem.axes(generic), problem.definition.var_axes))
        packets = [node.packet for node in graph.nodes if not node.is_view]
        ops = sorted({p for p in packets if p not in TRIVIAL_OPS and not _free(p)})
        category, source = (fields["category"], fields["category_source"])
        if source == "none":
            category, source = category_of(None, "", ops)
        direction, direction_source = direction_of(problem.name, problem.definition.op_type, tags, problem.definition.description,
                                                   list(problem.definition.outputs), packets)
        flops, moved = result.flops, result.bytes_cache_aware
        dependent = data_dependent_ops(graph, captures.concrete_only)
        fields.update(
            category=category, category_source=source, direction=direction, direction_source=direction_source,
            sol=SolFacts(workload=workload.uuid, workload_choice=choice, hardware=hardware.name, flops=flops, bytes=moved,
                         intensity=flops / moved if moved else None, bound="memory" if result.bottleneck == "memory" else "compute",
                         bottleneck=result.bottleneck, t_sol_ms=result.t_sol_s * 1e3, t_roofline_ms=result.t_roofline_s * 1e3,
                         t_floor_ms=result.t_floor_s * 1e3, partial=result.partial),
            ops=ops, distinct_ops=len(ops), fusion=len(ops) > 1, data_dependent=bool(dependent), data_dependent_ops=dependent, capture=graph.mode,
            capture_note=captures.concrete_only, fingerprint=fingerprint,
        )
    except Exception as exc:  # noqa: BLE001 - one problem's failure is recorded in its row, the others go on
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        fields["error"] = f"{type(exc).__name__}: {message}"[:500]
    finally:
        _forget_fake_dispatch_cache()
    return ProblemRow(**fields)


DATA_DEPENDENT_NOTE = re.compile(r"data-dependent ops \(([^)]*)\)")


def data_dependent_ops(graph: Any, concrete_only: str | None) -> list[str]:
    """Ops whose sizes or values depend on data, as the capture reports them: those of this graph, and those
    for which the symbolic capture was given up (a concrete capture on real integer inputs computes them
    exactly, so its graph no longer lists them)."""
    found = set(graph.data_dependent)
    match = DATA_DEPENDENT_NOTE.search(concrete_only or "")
    if match:
        found |= {op.strip() for op in match.group(1).split(",") if op.strip()}
    return sorted(found)


def _free(packet: str) -> bool:
    from solbench.sol.costs import FREE_OPS

    return packet in FREE_OPS


def _symbolic_graph(captures: Any, problem: Problem, workload: Workload) -> Any:
    """The symbolic capture that served this workload, if one did."""
    from solbench.sol.symbolic import scalar_key

    axes = problem.axes(workload)
    key = scalar_key(problem, workload)
    for made in captures.symbolic:
        if made.key == key and made.fits(axes):
            return made.graph
    return None
