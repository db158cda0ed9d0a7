"""A chat reply to a solution: the last fenced ```json block that is a solution object, else the last
fenced ```python block that defines `run`, made into a one-file PyTorch (or Triton) solution whose
style (destination-passing or returning) follows run's parameters. A reply with neither is no
solution, and the reason says what was expected."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from pydantic import ValidationError

from solbench.data.definition import Definition
from solbench.data.errors import SpecError, issues_from_validation_error
from solbench.data.solution import Solution

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)
PYTHON_TAGS = {"python", "py", "python3"}
ENTRY = "main.py"


def solution_from_reply(text: str, definition: Definition, name: str) -> tuple[Solution | None, str]:
    """(the solution, "") or (None, why there is none). The solution is named `name` and names the problem."""
    blocks = [(tag.lower(), body) for tag, body in FENCE.findall(text)]
    reasons = []
    for tag, body in reversed(blocks):
        if tag == "json" or (not tag and body.lstrip().startswith("{")):
            solution, why = _from_json(body, definition, name)
            if solution is not None:
                return solution, ""
            reasons.append(why)
    for tag, body in reversed(blocks):
        if tag in PYTHON_TAGS or (not tag and "def run" in body):
            solution, why = _from_python(body, definition, name)
            if solution is not None:
                return solution, ""
            reasons.append(why)
    if reasons:
        return None, reasons[0]
    return None, ("the reply holds no solution: expected a fenced ```python block defining run(...) with the problem's signature, "
                  "or a fenced ```json solution object (spec and sources)")


def _from_json(body: str, definition: Definition, name: str) -> tuple[Solution | None, str]:
    try:
        data: Any = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"the ```json block is not valid JSON: line {exc.lineno}: {exc.msg}"
    if not isinstance(data, dict) or "sources" not in data or "spec" not in data:
        return None, "the ```json block is not a solution object (it needs spec and sources)"
    data = {**data, "name": name, "definition": definition.name}
    try:
        return Solution.model_validate(data), ""
    except ValidationError as exc:
        issue = issues_from_validation_error(exc)[0]
        return None, f"the ```json solution is invalid: {issue}"
    except SpecError as exc:
        return None, f"the ```json solution is invalid: {exc.issues[0]}"


def _from_python(source: str, definition: Definition, name: str) -> tuple[Solution | None, str]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return None, f"the ```python block does not parse: line {exc.lineno}: {exc.msg}"
    run = next((node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "run"), None)
    if run is None:
        return None, "the ```python block defines no top-level run(...)"
    count = len(run.args.posonlyargs) + len(run.args.args)
    inputs, outputs = len(definition.inputs), len(definition.outputs)
    if count == inputs + outputs and outputs:
        dps = True
    elif count == inputs:
        dps = False
    else:
        return None, (f"run takes {count} parameters; expected {inputs} (the inputs, outputs returned) or {inputs + outputs} "
                      "(the inputs, then the preallocated outputs to write into)")
    language = "triton" if re.search(r"^\s*(import triton|from triton)", source, re.M) else "pytorch"
    return Solution.model_validate({
        "name": name, "definition": definition.name, "author": "optimize", "description": "proposed in a chat reply",
        "spec": {"languages": [language], "entry_point": f"{ENTRY}::run", "destination_passing_style": dps},
        "sources": [{"path": ENTRY, "content": source}],
    }), ""
