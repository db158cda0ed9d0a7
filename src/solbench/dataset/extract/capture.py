"""Capture of one submodule's forward (torch.export, non-strict) or backward (make_fx of a function
that calls torch.autograd.grad: torch.export cannot trace autograd.grad) as an aten-level graph.

Nothing big is allocated: modules with parameters are built under FakeTensorMode (CPU fakes) for
the forward and on the meta device for the backward; only parameter-free modules (rotary
embeddings) are built for real, so that their buffers can be inlined as constants.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from solbench.dataset.extract.configs import ModelConfig
from solbench.dataset.extract.modules import BATCH, FAMILIES, KV, PAGES, POOL, SEQ, VAR_AXES, Recipe
from solbench.dataset.extract.recipe import HEIGHT, LENGTH, WIDTH

# odd sizes that no model dimension shares (symbolic tracing merges equal sizes)
EXAMPLE = {BATCH: 3, SEQ: 37, KV: 53, PAGES: 5, POOL: 41, HEIGHT: 29, WIDTH: 31, LENGTH: 43}
UNTRACKED = ("num_batches_tracked",)  # buffers that eval-mode modules never read
WEIGHT_STD = 0.02
# state whose default distribution (normal, std 1) would make the problem unlike the model: a router's
# score-correction bias as large as its sigmoid scores (0..1) sends every token to the same few experts
# (22 of 256 hit, one of a rank's 32 in EP8), where a trained model's bias keeps the load balanced
STATE_DISTRIBUTIONS = (("e_score_correction_bias", {"kind": "normal", "mean": 0.0, "std": 0.01}),)


@dataclass
class Tensor:
    name: str
    dims: list[int | str]
    dtype: str
    distribution: dict | None = None
    weight: bool = False
    custom: bool = False  # made by the definition's custom entry point


@dataclass
class Captured:
    graph_module: Any  # torch.fx.GraphModule
    placeholders: list[str | None]  # a readable name for each placeholder, in graph order (None: unused, dropped)
    inputs: list[Tensor]  # the run() parameters, in order
    outputs: list[Tensor]
    constants: dict[str, Any] = field(default_factory=dict)  # placeholder name -> real tensor to inline
    axes: dict[str, int | tuple[str, int]] = field(default_factory=dict)  # the family's const/derived axes, the recipe's consts
    var_axes: list[str] = field(default_factory=list)  # the var axes, batch_size first
    exprs: dict[str, str] = field(default_factory=dict)  # the recipe's axes that are expressions of var axes
    custom: str | None = None  # source of the custom entry point make_inputs(axes, device)
    constraints: list[str] = field(default_factory=list)  # boolean expressions over the axes


def transformers_config(model: ModelConfig, tiny: bool = False) -> Any:
    """The transformers config of the model (or of its shrunk twin), set up for graph capture:
    SDPA attention unless the family asks for another (Gemma-2: eager, the only path with its logit softcapping)
    and the grouped-GEMM experts (the eager experts loop over data-dependent hits)."""
    import transformers

    family = FAMILIES[model.family]
    values = {**model.values, **(model.tiny if tiny else {})}
    config = getattr(transformers, family.config_class)(**values)
    config._attn_implementation = family.attn_implementation
    config._experts_implementation = "grouped_mm"
    return config


@contextlib.contextmanager
def default_dtype(dtype: Any) -> Iterator[None]:
    import torch

    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def build_module(model: ModelConfig, recipe: Recipe, dtype: str, config: Any, where: str) -> Any:
    """The transformers module of the recipe: `where` is "fake" (FakeTensorMode), "meta" or "cpu" (real)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    tm = FAMILIES[model.family].transformers_module()
    context: Any = contextlib.nullcontext()
    if where == "fake":
        context = FakeTensorMode(allow_non_fake_inputs=True)
    elif where == "meta":
        context = torch.device("meta")
    with default_dtype(torch_dtype(dtype)), context:
        module = recipe.build(tm, config)
    return module.eval()


def readable(name: str) -> str:
    return re.sub(r"\W", "_", name.removeprefix("inner."))


class _Call:
    """Calls a recipe on its module; as an nn.Module so that torch.func.functional_call can swap its state."""

    def __new__(cls, model: ModelConfig, recipe: Recipe, config: Any, module: Any) -> Any:
        import torch

        tm = FAMILIES[model.family].transformers_module()

        class Call(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = module

            def forward(self, *acts: Any) -> Any:
                return recipe.call(tm, config, self.inner, *acts)

        return Call()


def state_of(module: Any) -> list[tuple[str, Any]]:
    """The tensors that become inputs: parameters, then buffers whose values are unknown (fake/meta)."""
    from torch._subclasses.fake_tensor import FakeTensor

    state = list(module.named_parameters())
    state += [(n, b) for n, b in module.named_buffers()
              if (isinstance(b, FakeTensor) or b.device.type == "meta") and not n.endswith(UNTRACKED)]
    return state


def buffer_names(module: Any) -> set[str]:
    return {readable(n) for n, _ in module.named_buffers()}


def axis_lookup(axes: dict[str, int | tuple[str, int]]) -> dict[int, str]:
    """Value -> the first axis (const, then derived) with that value: how weight dims get names."""
    found: dict[int, str] = {}
    for name, value in axes.items():
        found.setdefault(value[1] if isinstance(value, tuple) else value, name)
    return found


def recipe_axes(recipe: Recipe, family_axes: dict[str, int | tuple[str, int]], config: Any = None) -> tuple[dict, dict[str, str]]:
    """The recipe's own axes (they name dims first), the family's, the recipe's consts; and its expressions of var axes."""
    consts = {n: v for n, v in recipe.axes if isinstance(v, int)}
    own = recipe.own_axes(config) if recipe.own_axes else {}
    return {**own, **family_axes, **consts}, {n: v for n, v in recipe.axes if isinstance(v, str)}


def example_values(axes: dict[str, int | tuple[str, int]]) -> dict[str, int]:
    return {n: (v[1] if isinstance(v, tuple) else v) for n, v in axes.items()} | EXAMPLE


def _act_sizes(recipe: Recipe, axes: dict[str, int | tuple[str, int]]) -> list[tuple[int, ...]]:
    values = example_values(axes) | ({SEQ: 5 * recipe.seq_multiple} if recipe.seq_multiple > 1 else {})
    return [tuple(d if isinstance(d, int) else values[d] for d in act.dims) for act in recipe.inputs]


def _var_axes(recipe: Recipe) -> list[str]:
    named = {d for a in recipe.inputs for d in a.dims if d in VAR_AXES}
    exprs = {n for n, v in recipe.axes if isinstance(v, str)}
    return [a for a in VAR_AXES if a in named and a not in exprs]


def _input_tensors(recipe: Recipe, model_dtype: str, state: list[tuple[str, Any]], axes: dict) -> list[Tensor]:
    lookup = axis_lookup(axes)
    given = dict(STATE_DISTRIBUTIONS + recipe.state_distributions)
    found = [Tensor(a.name, list(a.dims), a.dtype or model_dtype, a.distribution, custom=a.custom) for a in recipe.inputs]
    for name, value in state:
        dims = [lookup.get(int(d), int(d)) for d in value.shape]
        weight = value.dim() >= 2
        distribution = {"kind": "normal", "mean": 0.0, "std": WEIGHT_STD} if weight and value.dtype.is_floating_point else None
        distribution = next((d for suffix, d in given.items() if name.endswith(suffix)), distribution)
        found.append(Tensor(readable(name), dims, str(value.dtype).removeprefix("torch."), distribution, weight))
    return found


def capture_forward(model: ModelConfig, recipe: Recipe, dtype: str | None = None, tiny: bool = False) -> Captured:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.export import Dim, export
    from torch.export.graph_signature import InputKind

    dtype = dtype or model.dtype
    config = transformers_config(model, tiny)
    module = build_module(model, recipe, dtype, config, "cpu" if recipe.real else "fake")
    axes, exprs = recipe_axes(recipe, FAMILIES[model.family].axes(config), config)
    state = state_of(module)
    mode = next((p.fake_mode for _, p in state if hasattr(p, "fake_mode")), None) or FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        acts = [torch.empty(size, dtype=torch_dtype(a.dtype or dtype)) for a, size in zip(recipe.inputs, _act_sizes(recipe, axes))]
    dims = {name: Dim(name, min=1) for name in VAR_AXES}
    if recipe.seq_multiple > 1:
        dims[SEQ] = recipe.seq_multiple * Dim(f"{SEQ}_chunks", min=1)
    specs = tuple({i: dims[d] for i, d in enumerate(a.dims) if d in dims} or None for a in recipe.inputs) + (None,) * len(state)
    names = [name for name, _ in state]

    class Functional(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.call = _Call(model, recipe, config, module)

        def forward(self, *args: Any) -> Any:
            acts, weights = args[: len(recipe.inputs)], args[len(recipe.inputs):]
            return torch.func.functional_call(self.call, {f"inner.{n}": w for n, w in zip(names, weights)}, tuple(acts))

    with default_dtype(torch_dtype(dtype)):
        program = export(Functional(), tuple(acts) + tuple(v for _, v in state), dynamic_shapes=(specs,), strict=False)
    inputs = _input_tensors(recipe, dtype, state, axes)
    placeholders: list[str | None] = []
    constants = {}
    user = iter(inputs)
    nodes = [n for n in program.graph_module.graph.nodes if n.op == "placeholder"]
    for spec, node in zip(program.graph_signature.input_specs, nodes):
        if spec.kind == InputKind.USER_INPUT:
            placeholders.append(next(user).name)
            continue
        if not node.users:  # the module's own (swapped-out) parameters
            placeholders.append(None)
            continue
        value = program.state_dict.get(spec.target) if spec.target in program.state_dict else program.constants.get(spec.target)
        name = readable(spec.target.replace("call.inner.", "").replace("call.", ""))
        placeholders.append(name)
        constants[name] = value
    outputs = _forward_outputs(program.graph_module, recipe, inputs, axes)
    constraints = [f"{SEQ} % {recipe.seq_multiple} == 0"] if recipe.seq_multiple > 1 else []
    return Captured(program.graph_module, placeholders, inputs, outputs, constants, axes, _var_axes(recipe), exprs, recipe.custom,
                    constraints)


def _forward_outputs(graph_module: Any, recipe: Recipe, inputs: list[Tensor], axes: dict) -> list[Tensor]:
    """Output shapes in axis names: symbols of the var dims mapped back through the inputs' shapes."""
    symbols: dict[str, str] = {}
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    user = placeholders[len(placeholders) - len(inputs):]
    for node, tensor in zip(user, inputs):
        for size, dim in zip(node.meta["val"].shape, tensor.dims):
            if not isinstance(size, int):
                symbols.setdefault(str(size.node.expr), str(dim))
    lookup = axis_lookup(axes)
    output = next(n for n in graph_module.graph.nodes if n.op == "output")
    values = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    found = []
    for name, node in zip(recipe.outputs, values):
        val = node.meta["val"]
        dims: list[int | str] = []
        for size in val.shape:
            if isinstance(size, int):
                dims.append(lookup.get(size, size))
            else:
                expr = str(size.node.expr)
                dims.append(symbols.get(expr) or _expression(expr, symbols))
        found.append(Tensor(name, dims, str(val.dtype).removeprefix("torch.")))
    if len(values) != len(recipe.outputs):
        raise ValueError(f"{recipe.module}: the graph has {len(values)} outputs, the recipe names {len(recipe.outputs)}")
    return found


def _expression(expr: str, symbols: dict[str, str]) -> str:
    text = re.sub(r"\b[su]\d+\b", lambda m: symbols[m.group(0)], expr)
    raise ValueError(f"an output dimension is derived ({text}); only plain axes are supported")


def _unspecialise_group_norm_batch(graph_module: Any) -> None:
    """native_group_norm_backward's batch argument comes out of make_fx as the example's literal batch size:
    it is put back as the size of its gradient's first dimension."""
    import torch

    target = torch.ops.aten.native_group_norm_backward.default
    for node in list(graph_module.graph.nodes):
        if node.op == "call_function" and node.target == target and isinstance(node.args[5], int):
            with graph_module.graph.inserting_before(node):
                batch = graph_module.graph.call_function(torch.ops.aten.sym_size.int, (node.args[0], 0))
            node.args = (*node.args[:5], batch, *node.args[6:])
    graph_module.recompile()


def capture_backward(model: ModelConfig, recipe: Recipe, dtype: str | None = None, tiny: bool = False) -> Captured:
    """The gradients of the floating inputs and of the weights, given a gradient for each output."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    dtype = dtype or model.dtype
    forward = capture_forward(model, recipe, dtype, tiny)
    config = transformers_config(model, tiny)
    module = build_module(model, recipe, dtype, config, "meta")
    call = _Call(model, recipe, config, module)
    state = state_of(module)
    names = [name for name, _ in state]
    axes = forward.axes
    n_acts = len(recipe.inputs)
    frozen = set(recipe.no_grad) | buffer_names(module)  # buffers (running statistics, biases of routers) get no gradient
    wrt = [i for i, t in enumerate(forward.inputs) if torch_dtype(t.dtype).is_floating_point and t.name not in frozen]

    def run(*args: Any) -> Any:
        given, grads = list(args[: len(forward.inputs)]), args[len(forward.inputs):]
        for i in wrt:
            given[i] = given[i].detach().requires_grad_(True)
        with torch.enable_grad():
            outs = torch.func.functional_call(call, {f"inner.{n}": w for n, w in zip(names, given[n_acts:])}, tuple(given[:n_acts]))
            outs = outs if isinstance(outs, tuple) else (outs,)
            return torch.autograd.grad(outs, [given[i] for i in wrt], grads)

    sizes = _act_sizes(recipe, axes)
    example = [torch.empty(s, dtype=torch_dtype(a.dtype or dtype), device="meta") for a, s in zip(recipe.inputs, sizes)]
    example += [torch.empty_like(v, device="meta") for _, v in state]
    lookup = example_values(axes) | ({SEQ: 5 * recipe.seq_multiple} if recipe.seq_multiple > 1 else {})
    grads = [torch.empty([d if isinstance(d, int) else lookup[d] for d in o.dims], dtype=torch_dtype(o.dtype), device="meta")
             for o in forward.outputs]
    with default_dtype(torch_dtype(dtype)):
        graph_module = make_fx(run, tracing_mode="symbolic")(*example, *grads)
    _unspecialise_group_norm_batch(graph_module)
    grad_inputs = [Tensor(f"grad_{o.name}", list(o.dims), o.dtype) for o in forward.outputs]
    inputs = forward.inputs + grad_inputs
    outputs = [Tensor(f"grad_{forward.inputs[i].name}", list(forward.inputs[i].dims), forward.inputs[i].dtype) for i in wrt]
    return Captured(graph_module, [t.name for t in inputs], inputs, outputs, {}, axes, forward.var_axes, forward.exprs, forward.custom,
                    forward.constraints)
