"""`solbench dataset extract`: problem folders captured from the transformers code of known models."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import console, reports_user_errors
from .dataset import dataset_app


@dataset_app.command("extract")
@reports_user_errors
def extract(
    model: Annotated[Optional[str], typer.Argument(help="A known model (see --list), e.g. llama3_8b or Llama-3-8B.")] = None,
    modules: Annotated[Optional[str], typer.Option("--modules", "-m", help="Comma-separated submodules (default: all of the model's), e.g. attention,mlp,norm.")] = None,
    backward: Annotated[bool, typer.Option("--backward", help="Also extract the backward of each submodule that has one.")] = False,
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder that receives one problem folder per submodule.")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace problem folders that exist already.")] = False,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="float32, bfloat16 or float16 (default: the dtype the model is published in); a dtype other than the published one is named by a suffix, e.g. _fp32.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the known models and their submodules, then exit.")] = False,
) -> None:
    """Capture submodules of a model's layer (built from transformers with the published config, no weights) as problems."""
    from solbench.data.errors import SpecError
    from solbench.dataset.extract import extract as run_extract, list_models

    if list_:
        for config, names in list_models():
            console.print(f"{config.name:18} {config.title:18} {config.dtype:9} {config.hf_id:32} {', '.join(names)}", markup=False, soft_wrap=True)
        return
    if not model:
        raise SpecError("name a model (see --list)", field="MODEL")
    chosen = [m.strip() for m in modules.split(",") if m.strip()] if modules else None
    if modules is not None and not chosen:
        raise SpecError("expected a comma-separated list of submodules", field="--modules")
    start = time.perf_counter()
    done = run_extract(model, chosen, backward, output, force, dtype=dtype,
                       on_problem=lambda p: console.print(f"{p.folder}: {p.workloads} workloads ({p.seconds:.2f} s)", markup=False),
                       on_skip=lambda name, why: console.print(f"{name}: not written: {why}", markup=False))
    console.print(f"{model}: {len(done)} problems in {time.perf_counter() - start:.1f} s", markup=False)
