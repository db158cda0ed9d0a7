"""The pieces every template is made of: a problem spec, its tensors, and the shared size grids.

A template builds a `Spec`: the definition's fields plus a grid of realistic values for the var
axes and one SMALL axis assignment (all tensors together under 8 MB) that runs on a CPU. The
generator (`solbench.dataset.synthetic.generate`) turns specs into files.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from dataclasses import dataclass, field
from typing import Callable

from solbench.dataset.synthetic.models import Model

VAR = None  # an axis value in Spec.axes: None is a var axis, an int a const, a str an expression

# Shared grids of realistic sizes.
TOKENS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192]
BATCH = [1, 2, 4, 8, 16, 32, 64]
SEQ = [128, 256, 512, 1024, 2048, 4096, 8192]
PAGES = [256, 1024, 4096, 16384]
ROWS = TOKENS + [16384]


def upto(values: list[int], most: int) -> list[int]:
    return [v for v in values if v <= most]


DTYPE_BYTES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "float4_e2m1fn_x2": 1, "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}

SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}  # dtype spellings in problem names

SMALL_BYTES = 8 * 2**20
LARGE_BYTES = 2 * 2**30


@dataclass
class Tensor:
    """An input or output. `make` says how a workload gives an input: random, scalar or custom."""

    name: str
    shape: list[int | str] | None
    dtype: str
    make: str = "random"
    value: float | int | str | None = None
    description: str | None = None


def t(name: str, shape: list[int | str], dtype: str, description: str | None = None) -> Tensor:
    """A tensor drawn at random by the harness."""
    return Tensor(name, list(shape), dtype, description=description)


def scalar(name: str, value: float | int | str, dtype: str = "float32", description: str | None = None) -> Tensor:
    """A Python scalar whose value every workload gives (eps, scale, theta, ...); a str value is an
    axis whose value the workload gives."""
    return Tensor(name, None, dtype, "scalar", value, description)


def random_scalar(name: str, dtype: str = "float32", description: str | None = None) -> Tensor:
    """A Python scalar drawn at random (one draw of the dtype)."""
    return Tensor(name, None, dtype, "random", description=description)


def custom(name: str, shape: list[int | str], dtype: str, description: str | None = None) -> Tensor:
    """A structured input (indices, page tables, ...) made by the reference's custom entry point."""
    return Tensor(name, list(shape), dtype, "custom", description=description)


def out(name: str, shape: list[int | str], dtype: str) -> Tensor:
    return Tensor(name, list(shape), dtype)


@dataclass
class Spec:
    """One problem before it is written: the definition plus how to pick its workloads.

    `grid` maps a var axis (or a tuple of var axes that go together) to its candidate values;
    `small` is the workload every problem gets so that its reference runs on a CPU.
    """

    name: str
    op_type: str
    description: str
    hf_id: str
    axes: dict[str, int | str | None]
    inputs: list[Tensor]
    outputs: list[Tensor]
    reference: str
    grid: dict[str | tuple[str, ...], list]
    small: dict[str, int]
    constraints: list[str] = field(default_factory=list)
    custom: str | None = None
    valid: Callable[[dict[str, int]], bool] | None = None
    neg_inf: bool = False  # outputs may hold -inf: some workloads allow it
    quirk: tuple[str, str, object] | None = None  # ("axes" | "inputs", name, value) added to some lines
    tolerance: tuple[float, float, float] | None = None  # (atol, rtol, ratio); None: by output dtype

    @property
    def var_axes(self) -> list[str]:
        return [name for name, value in self.axes.items() if value is VAR]


def source(text: str, *parts: str) -> str:
    """A reference's source: the dedented text, with shared snippets (`parts`) after its imports
    (the code after the imports is dedented on its own, so that it may be indented differently)."""
    lines = textwrap.dedent(text).strip("\n").split("\n")
    cut = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith(("import ", "from ")))
    head = "\n".join(lines[:cut]).strip("\n")
    blocks = [textwrap.dedent(p).strip("\n") for p in parts] + [textwrap.dedent("\n".join(lines[cut:])).strip("\n")]
    return head + "\n\n\n" + "\n\n\n".join(blocks) + "\n"


def batch_of_one(spec: Spec, leading: str = "num_tokens") -> Spec:
    """The spec traced from a model run with batch 1: every tensor whose shape starts with `leading`
    gets a literal leading dim of 1 (the reference must not care about the rank)."""
    for tensor in spec.inputs + spec.outputs:
        if tensor.shape and tensor.shape[0] == leading:
            tensor.shape = [1] + tensor.shape
    spec.name = spec.name + "_b1"
    return spec


def autograd_backward(forward: Spec, wrt: list[str], grads: dict[str, str], **changes) -> Spec:
    """The backward problem of `forward` through torch.autograd.grad: the gradients of its inputs `wrt`,
    given a gradient input for each output named in `grads` (output -> gradient input; empty for a
    0-d loss). The reference keeps the forward's as `forward(...)` and adds a `run` that differentiates it."""
    params = [x.name for x in forward.inputs]
    index = {x.name: i for i, x in enumerate(forward.outputs)}
    outputs = {x.name: x for x in forward.outputs}
    lines = [f"def run({', '.join(params + list(grads.values()))}):"]
    lines += [f"    {name} = {name}.detach().requires_grad_(True)" for name in wrt]
    if len(forward.outputs) == 1:
        lines.append(f"    out = forward({', '.join(params)})")
        targets = ["out"]
    else:
        lines.append(f"    outs = forward({', '.join(params)})")
        targets = [f"outs[{index[name]}]" for name in grads]
    target = targets[0] if len(targets) == 1 else f"({', '.join(targets)})"
    given = "" if not grads else ", " + (next(iter(grads.values())) if len(grads) == 1 else f"({', '.join(grads.values())})")
    leaves = f"({wrt[0]},)" if len(wrt) == 1 else f"({', '.join(wrt)})"
    lines.append(f"    return torch.autograd.grad({target}, {leaves}{given})" + ("[0]" if len(wrt) == 1 else ""))
    head, found, tail = forward.reference.partition("\ndef run(")
    assert found, forward.name
    reference = head + "\ndef forward(" + tail.rstrip("\n") + "\n\n\n" + "\n".join(lines) + "\n"
    by_name = {x.name: x for x in forward.inputs}
    return dataclasses.replace(
        forward,
        name=re.sub(r"_(bf16|fp16|fp32)_", r"_backward_\1_", forward.name, count=1),
        op_type=forward.op_type + "_backward",
        description=f"Backward of: {forward.description} Gradients of {', '.join(wrt)} via torch.autograd.grad.",
        inputs=[dataclasses.replace(x) for x in forward.inputs]
        + [Tensor(g, list(outputs[o].shape), outputs[o].dtype) for o, g in grads.items()],
        outputs=[Tensor(f"grad_{name}", list(by_name[name].shape), by_name[name].dtype) for name in wrt],
        reference=reference,
        neg_inf=False,
        quirk=None,
        **changes,
    )


def resolve_axes(spec: Spec, given: dict[str, int]) -> dict[str, int]:
    """Every axis value of a workload: consts, the given vars, expressions (integer arithmetic)."""
    values = {name: v for name, v in spec.axes.items() if isinstance(v, int)}
    values.update({name: v for name, v in given.items() if name in spec.axes})
    pending = {name: v for name, v in spec.axes.items() if isinstance(v, str)}
    while pending:
        ready = {name: e for name, e in pending.items() if set(re.findall(r"[A-Za-z_]\w*", e)) <= values.keys()}
        if not ready:
            raise ValueError(f"{spec.name}: expression axes {sorted(pending)} use unknown axes")
        for name, expression in ready.items():
            values[name] = int(eval(expression, {"__builtins__": {}}, dict(values)))  # the templates' own arithmetic
            del pending[name]
    return values


def tensor_bytes(tensor: Tensor, axes: dict[str, int]) -> int:
    if tensor.shape is None:
        return 0
    count = 1
    for dim in tensor.shape:
        count *= int(dim) if isinstance(dim, int) or str(dim).isdigit() else axes[dim]
    return count * DTYPE_BYTES[tensor.dtype]


def workload_bytes(spec: Spec, given: dict[str, int]) -> int:
    axes = resolve_axes(spec, given)
    return sum(tensor_bytes(x, axes) for x in spec.inputs + spec.outputs)


def model_spec(model: Model, name: str, op_type: str, description: str, axes: dict, inputs: list[Tensor], outputs: list[Tensor],
               reference: str, *parts: str, grid: dict, small: dict, **extra) -> Spec:
    """A Spec of one of the model's layers (its hf_id), the reference assembled from text and snippets."""
    return Spec(name=name, op_type=op_type, description=description, hf_id=extra.pop("hf_id", model.hf_id), axes=axes,
                inputs=inputs, outputs=outputs, reference=source(reference, *parts), grid=grid, small=small, **extra)


def mnk_spec(model: Model, n: int, k: int, column: bool, name: str, op_type: str, description: str, inputs: list[Tensor],
             outputs: list[Tensor], reference: str, *parts: str, axes: dict | None = None, **extra) -> Spec:
    """A GEMM-shaped problem: var axes M, N, K; workloads at the model's weight [n, k] split over
    tensor-parallel ranks (by N for a column-parallel weight, by K otherwise), and M from TOKENS."""
    return model_spec(model, name, op_type, description, {"M": VAR, "N": VAR, "K": VAR, **(axes or {})}, inputs, outputs,
                      reference, *parts, grid={"M": TOKENS, ("N", "K"): tp_shards(n, k, column) or [(n, k)]},
                      small={"M": 16, "N": 256, "K": 512}, **extra)


def rows_spec(model: Model, name: str, op_type: str, description: str, inputs: list[Tensor], outputs: list[Tensor], reference: str,
              *parts: str, width: int | None = None, width_axis: str = "hidden_size", rows: list[int] | None = None,
              small_rows: int = 64, axes: dict | None = None, grid: dict | None = None, small: dict | None = None, **extra) -> Spec:
    """A problem over rows of tokens: a var axis num_tokens and a const width (the model's hidden size by
    default); `axes`, `grid` and `small` add further axes and their values."""
    return model_spec(model, name, op_type, description, {"num_tokens": VAR, width_axis: width or model.hidden, **(axes or {})},
                      inputs, outputs, reference, *parts, grid={"num_tokens": rows or ROWS, **(grid or {})},
                      small={"num_tokens": small_rows, **(small or {})}, **extra)


def tp_shards(n: int, k: int, column: bool, ways: tuple[int, ...] = (1, 2, 4, 8)) -> list[tuple[int, int]]:
    """(N, K) of a weight [N, K] split over tensor-parallel ranks: by N (column) or by K (row)."""
    shards = []
    for tp in ways:
        size = n if column else k
        if size % tp == 0 and size // tp >= 128:
            shards.append((n // tp, k) if column else (n, k // tp))
    return shards
