"""A captured graph turned into a standalone reference: `import torch` and a top-level `run(...)`
whose parameters are the problem's inputs, with aten calls and constants inlined.

The body is torch.fx's own code generation of the cleaned graph (assertions and detaches dropped,
dead code removed, each intermediate tensor deleted after its last use); tensors the graph creates
are put on the device of the first input."""

from __future__ import annotations

import re
from typing import Any

from solbench.dataset.extract.capture import Captured

_DROPPED = ("_assert", "sym_constrain_range")  # shape/dtype assertions of export: no effect on values
_LITERAL_LIMIT = 8192  # constants with more elements than this are not inlined


def _clean(graph: Any) -> None:
    import torch

    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        name = getattr(node.target, "__name__", str(node.target))
        if name.startswith(_DROPPED) and not node.users:
            graph.erase_node(node)
        elif node.target in (torch.ops.aten.detach.default, torch.ops.aten.alias.default) and node.op == "call_function":
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    graph.eliminate_dead_code()


def _holds_tensor(value: Any) -> bool:
    import torch

    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(item) for item in value)
    return isinstance(value, torch.Tensor)


def _tensor_names(graph: Any) -> set[str]:
    """The graph's values that hold tensors (sizes and other Python numbers are not worth a `del`)."""
    return {node.name for node in graph.nodes if node.op != "placeholder" and _holds_tensor(node.meta.get("val"))}


def _with_frees(lines: list[str], tensors: set[str]) -> list[str]:
    """torch.fx ends the line of a value's last use with `;  a = b = None`; those become a `del` of the
    tensors among them on the next line. Kept, not dropped: without them every intermediate of a
    long graph stays alive until `run` returns (a DeepSeek-V3 attention backward at 8,192 tokens then
    needed over 130 GiB on the H200, most of it dead tensors)."""
    body = []
    for line in lines:
        found = re.match(r"^(\s*)(.*?);  ((?:\w+ = )+)None$", line)
        if found is None:
            body.append(line)
            continue
        indent, statement, freed = found.groups()
        body.append(indent + statement)
        dead = [name for name in freed.split(" = ") if name in tensors]
        if dead:
            body.append(f"{indent}del {', '.join(dead)}")
    return body


def _literal(value: Any) -> str:
    return repr(value.detach().cpu().tolist())


def reference_source(captured: Captured, docstring: str) -> str:
    import copy

    from torch.fx.graph import CodeGen

    graph_module = copy.deepcopy(captured.graph_module)
    graph = graph_module.graph
    graph._codegen = CodeGen()  # plain positional code, no pytree flattening
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(captured.placeholders):
        raise ValueError(f"the graph has {len(placeholders)} inputs, {len(captured.placeholders)} names were given")
    for node, name in list(zip(placeholders, captured.placeholders)):
        if name is None:
            if node.users:
                raise ValueError(f"graph input {node.name} is used but has no name")
            graph.erase_node(node)
    placeholders, names = zip(*[(n, name) for n, name in zip(placeholders, captured.placeholders) if name is not None])
    wanted = set(names)
    for node in graph.nodes:
        if node.op != "placeholder" and node.name in wanted:
            node._rename(f"{node.name}_out")
    for node, name in zip(placeholders, names):
        node._rename(name)
        node.target = node.name
        if node.name != name:
            raise ValueError(f"input name {name} is taken in the graph")
    _clean(graph)
    code = graph.python_code(root_module="self")
    lines = code.src.strip("\n").split("\n")
    body = _with_frees(lines[1:], _tensor_names(graph))  # the inputs are placeholders: never deleted
    body = [line for line in body if line.strip()]
    first = captured.inputs[0].name
    text = "\n".join(body)
    text = re.sub(r"device\(type='\w+'(, index=\d+)?\)", f"{first}.device", text)
    text = re.sub(r"return \((\w+),\)$", r"return \1", text)
    head = ["import torch"]
    if re.search(r"\binf\b", text):
        head.append("from math import inf")
    if re.search(r"\bnan\b", text):
        head.append("from math import nan")
    for name in ("math", "operator"):
        if re.search(rf"\b{name}\.", text):
            head.insert(0, f"import {name}")
    blocks = ["\n".join(head)]
    setup = []
    for name, value in captured.constants.items():
        if value is None or value.numel() > _LITERAL_LIMIT:
            raise ValueError(f"constant {name} has no value to inline (or is too large)")
        const = name.upper()
        blocks.append(f"{const} = {_literal(value)}  # {name}, {str(value.dtype).removeprefix('torch.')} {list(value.shape)}")
        dtype = str(value.dtype)
        setup.append(f"    {name} = torch.tensor({const}, dtype={dtype}, device={first}.device)")
    params = ", ".join(t.name for t in captured.inputs)
    doc = f'    """{docstring}"""'
    blocks.append("\n".join([f"def run({params}):", doc, *setup, text]))
    if captured.custom:
        blocks.append(captured.custom.strip("\n"))
    source = "\n\n\n".join(blocks) + "\n"
    compile(source, "<reference>", "exec")
    return source
