"""The bundled problem set, and (later) tools that extract and sample problems from real models."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def bundled_problems_path() -> Path:
    """Folder of the default problems shipped inside the package."""
    return Path(str(files("solbench.dataset") / "problems"))
