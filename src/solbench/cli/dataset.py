"""`solbench dataset`: the command group of the dataset tools (extract, characterise, sample, stats);
each tool registers its command on `dataset_app` from a module of its own (cli/dataset_*.py)."""

from __future__ import annotations

import typer

from .app import app

dataset_app = typer.Typer(help="Dataset tools: extract problems from models, characterise, sample and summarise a problem set.",
                          no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")
