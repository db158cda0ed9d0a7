"""One extracted problem as a folder in the bundled layout: definition.json and workload.jsonl."""

from __future__ import annotations

from pathlib import Path

from solbench.data.files import dump_json, dump_jsonl, write_atomically
from solbench.data.loaders.problem_folder import DEFINITION_FILE, WORKLOAD_FILE
from solbench.dataset.extract.capture import Captured

CUSTOM_ENTRYPOINT = "make_inputs"  # the function of the recipe's custom source


def _used_axes(captured: Captured) -> dict[str, dict]:
    """The axes the tensors name: var axes, the config's consts, and derived axes with the consts they use."""
    named = [d for t in captured.inputs + captured.outputs for d in t.dims if isinstance(d, str)]
    for tensor in captured.inputs:
        bound = (tensor.distribution or {}).get("high")
        if isinstance(bound, str):
            named.append(bound)
    used = dict.fromkeys(named)
    for name in list(used):
        value = captured.axes.get(name, captured.exprs.get(name))
        expression = value[0] if isinstance(value, tuple) else value
        if isinstance(expression, str):
            known = set(captured.axes) | set(captured.var_axes)
            used.update(dict.fromkeys(w for w in expression.replace("*", " ").split() if w in known))
    axes: dict[str, dict] = {}
    for name in captured.var_axes:
        if name in used:
            axes[name] = {"type": "var"}
    for name, value in captured.axes.items():
        if name in used and not isinstance(value, tuple):
            axes[name] = {"type": "const", "value": value}
    for name, value in captured.axes.items():
        if name in used and isinstance(value, tuple):
            axes[name] = {"type": "expr", "expression": value[0]}
    for name, expression in captured.exprs.items():
        if name in used:
            axes[name] = {"type": "expr", "expression": expression}
    return axes


def _tensor(tensor) -> dict:
    entry: dict = {"shape": list(tensor.dims), "dtype": tensor.dtype}
    if tensor.distribution:
        entry["distribution"] = tensor.distribution
    return entry


def definition_json(name: str, op_type: str, description: str, hf_id: str, captured: Captured, reference: str) -> dict:
    custom = {"custom_inputs_entrypoint": CUSTOM_ENTRYPOINT} if captured.custom else {}
    constraints = {"constraints": captured.constraints} if captured.constraints else {}
    return {
        "name": name,
        "op_type": op_type,
        "description": description,
        "hf_id": hf_id,
        "axes": _used_axes(captured),
        **constraints,
        "inputs": {t.name: _tensor(t) for t in captured.inputs},
        "outputs": {t.name: _tensor(t) for t in captured.outputs},
        "reference": reference,
        **custom,
    }


def write_problem(folder: Path, definition: dict, workloads: list[dict]) -> None:
    """Writes (or, when the caller allows it, replaces) both files; each write is atomic."""
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / DEFINITION_FILE, dump_json(definition))
    write_atomically(folder / WORKLOAD_FILE, dump_jsonl(workloads))
