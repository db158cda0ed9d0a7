"""Finding the NVIDIA tools: Nsight Compute (`ncu`) and `compute-sanitizer`.

A tool is taken from its override variable when that is set ($SOLBENCH_NCU, $SOLBENCH_COMPUTE_SANITIZER:
a path, used as given), else from PATH, else from the CUDA toolkit ($CUDA_HOME/bin, $CUDA_PATH/bin,
/usr/local/cuda/bin). A tool that is not found is a ToolMissing whose message is one line naming the
tool and every place looked in.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

TOOLKIT_BIN = Path("/usr/local/cuda/bin")


@dataclass(frozen=True)
class Tool:
    name: str  # the program's name
    variable: str  # the variable that overrides where it is
    purpose: str  # what solbench needs it for (said when it is missing)


NCU = Tool("ncu", "SOLBENCH_NCU", "Nsight Compute, for `solbench profile` and `run --profile`")
SANITIZER = Tool("compute-sanitizer", "SOLBENCH_COMPUTE_SANITIZER", "for --memcheck")


class ToolMissing(RuntimeError):
    """A tool that is not there (one line: which, and where it was looked for)."""


def toolkit_folders() -> list[Path]:
    """The CUDA toolkit's bin folders, in the order they are searched after PATH."""
    folders = [Path(os.environ[name]) / "bin" for name in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(name)]
    return list(dict.fromkeys([*folders, TOOLKIT_BIN]))


def find_tool(tool: Tool) -> Path:
    """The tool's executable; ToolMissing (one line) where there is none."""
    override = os.environ.get(tool.variable)
    if override:
        path = Path(override)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise ToolMissing(f"{tool.name} ({tool.purpose}) not found: ${tool.variable} names {override}, which is not an executable file")
    found = shutil.which(tool.name)
    if found:
        return Path(found)
    for folder in toolkit_folders():
        candidate = folder / tool.name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    places = ", ".join(["PATH", *(str(folder) for folder in toolkit_folders())])
    raise ToolMissing(f"{tool.name} ({tool.purpose}) not found: looked on {places}; install the CUDA toolkit's {tool.name} "
                      f"or set ${tool.variable} to its path")
