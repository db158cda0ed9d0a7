"""The solbench command line: one typer app over every stage, a module per command group."""

from .app import app, main
from . import audit, evaluate, hw, problems, sol  # noqa: F401 - importing registers the commands

__all__ = ["app", "main"]
