"""Helpers of the extract tests: a problem extracted from a shrunk fp32 config, beside the real module it came from."""

from __future__ import annotations

from pathlib import Path

import torch

from solbench.data.loaders import load_problems
from solbench.dataset.extract.api import build_problem
from solbench.dataset.extract.capture import UNTRACKED, build_module, transformers_config
from solbench.dataset.extract.configs import MODELS
from solbench.dataset.extract.modules import FAMILIES
from solbench.dataset.extract.writer import write_problem


def module_state(module, inlined: bool = False) -> list:
    """The reference's weight inputs as the capture's state_of gives them: parameters, then the buffers
    the module reads; inlined (a recipe built for real, e.g. rotary embeddings): its buffers are
    constants of the reference, not inputs."""
    buffers = [] if inlined else [(n, b) for n, b in module.named_buffers() if not n.endswith(UNTRACKED)]
    return list(module.named_parameters()) + buffers


def tiny_problem(tmp_path: Path, model_name: str, module: str, backward: bool = False):
    """(model, recipe, problem, real module with seeded weights, config) of the shrunk config of a model,
    extracted through the path the full-size configs take."""
    model = MODELS[model_name]
    recipe = FAMILIES[model.family].recipes[module]
    name = f"tiny_{model_name}_{module}" + ("_backward" if backward else "")
    definition, lines = build_problem(model, recipe, backward, name, dtype="float32", tiny=True)
    write_problem(tmp_path / name, definition, lines)
    [problem] = load_problems([tmp_path / name])
    config = transformers_config(model, tiny=True)
    real = build_module(model, recipe, "float32", config, "cpu")
    torch.manual_seed(0)
    with torch.no_grad():
        for name_, p in module_state(real, inlined=recipe.real):
            if name_.endswith("running_var"):
                p.copy_(torch.rand_like(p) + 0.5)
            else:
                p.copy_(torch.randn_like(p) * 0.2 + (1.0 if p.dim() == 1 and not name_.endswith("running_mean") else 0.0))
    return model, recipe, problem, real, config
