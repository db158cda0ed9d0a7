"""The kinds of a model family's extraction: activation inputs, recipes (how one submodule is built
and called) and families (a transformers modeling package with its recipes)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

BATCH, SEQ = "batch_size", "seq_len"
KV, PAGES, POOL = "kv_len", "pages_per_seq", "num_pages"  # decode: cached tokens; paged: pages per sequence, pool size
HEIGHT, WIDTH = "height", "width"  # the spatial axes of an image's feature map (width: an expression of height)
LENGTH = "length"  # the samples of a 1-d signal
VAR_AXES = (BATCH, SEQ, KV, PAGES, POOL, HEIGHT, WIDTH, LENGTH)  # the axes that stay symbolic in a capture
UNIT = {"kind": "uniform", "low": -1.0, "high": 1.0}  # cos/sin values
POSITIONS = {"kind": "integers", "low": 0, "high": SEQ}


@dataclass(frozen=True)
class Act:
    """An activation input of a recipe: its axes, and a dtype other than the model's if it has one."""

    name: str
    dims: tuple[str | int, ...]
    dtype: str | None = None
    distribution: dict | None = None
    custom: bool = False  # made by the recipe's custom entry point (e.g. a valid page table)


@dataclass(frozen=True)
class Recipe:
    module: str  # the --modules name
    op_type: str
    summary: str  # what it computes, for the description
    build: Callable[[Any, Any], Any]  # (transformers module of the family, config) -> nn.Module
    call: Callable[..., Any]  # (family module, config, nn.Module, *activations) -> output(s)
    inputs: tuple[Act, ...]
    outputs: tuple[str, ...] = ("output",)
    real: bool = False  # no parameters: built for real on the CPU, so its buffers are inlined constants
    backward: bool = True  # a backward problem can be extracted
    second: str = SEQ  # the var axis beside batch_size
    step: int = 1  # tokens per unit of `second` (the page size for pages_per_seq)
    grid: tuple[tuple[int, int], ...] | None = None  # preferred (batch, tokens) pairs; None: the prefill grid
    axes: tuple[tuple[str, int | str], ...] = ()  # the recipe's own axes: const values, or expressions of var axes
    custom: str | None = None  # source of the custom entry point `make_inputs(axes, device)` of the custom inputs
    no_grad: tuple[str, ...] = ()  # floating inputs that get no gradient in the backward
    seq_multiple: int = 1  # seq_len is a multiple of this (a chunked scan's chunk size): traced as such, a constraint
    own_axes: Callable[[Any], dict[str, int | tuple[str, int]]] | None = None  # config -> axes that name dims before the family's
    state_distributions: tuple[tuple[str, dict], ...] = ()  # weight/buffer name suffix -> its distribution (e.g. positive variances)


@dataclass(frozen=True)
class Family:
    modeling: str  # transformers.models.<modeling>.modeling_<modeling>
    config_class: str
    axes: Callable[[Any], dict[str, int | tuple[str, int]]]  # const axes, then derived ones (name -> (expression, value))
    recipes: dict[str, Recipe] = field(default_factory=dict)
    attn_implementation: str = "sdpa"  # the config's _attn_implementation in a capture ("eager" where SDPA drops a step)

    def transformers_module(self) -> Any:
        return importlib.import_module(f"transformers.models.{self.modeling}.modeling_{self.modeling}")
