"""Solution sources given by path only: read from the files beside the solution JSON, inside its folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.data.errors import SpecError
from solbench.data.loaders import load_solution, scan

SOLUTION = {"name": "by-path", "definition": "vector_scale", "spec": {"languages": ["pytorch"], "entry_point": "main.py::run",
                                                                     "destination_passing_style": False}}


def _write(folder: Path, sources: list[dict], files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    path = folder / "solution.json"
    path.write_text(json.dumps({**SOLUTION, "sources": sources}))
    return path


def test_a_source_without_content_is_read_from_its_file_and_edits_take_effect(tmp_path: Path):
    path = _write(tmp_path / "s", [{"path": "main.py"}, {"path": "lib/helper.py"}],
                  {"main.py": "def run(x, alpha):\n    return x * alpha\n", "lib/helper.py": "SCALE = 2\n"})
    solution = load_solution(path)
    assert solution.source("main.py") == "def run(x, alpha):\n    return x * alpha\n"
    assert solution.source("lib/helper.py") == "SCALE = 2\n"
    (tmp_path / "s" / "main.py").write_text("def run(x, alpha):\n    return alpha * x\n")
    assert load_solution(path).source("main.py") == "def run(x, alpha):\n    return alpha * x\n"


def test_inline_content_wins_over_a_file_of_the_same_name(tmp_path: Path):
    path = _write(tmp_path / "s", [{"path": "main.py", "content": "INLINE = 1\ndef run(x, alpha):\n    return x\n"}], {"main.py": "FILE = 1\n"})
    assert load_solution(path).source("main.py").startswith("INLINE")


def test_a_missing_file_is_one_error_naming_the_field(tmp_path: Path):
    path = _write(tmp_path / "s", [{"path": "main.py"}], {})
    with pytest.raises(SpecError) as caught:
        load_solution(path)
    (issue,) = caught.value.issues
    assert issue.field == "sources.0.content" and "no file 'main.py' beside the solution" in issue.message
    (loaded,) = [item for item in scan(path)]
    assert not loaded.ok and loaded.kind == "solution" and "sources.0.content" in str(loaded.errors[0])


def test_a_link_leading_out_of_the_folder_is_not_read(tmp_path: Path):
    secret = tmp_path / "secret.py"
    secret.write_text("TOKEN = 'x'\n")
    folder = tmp_path / "s"
    folder.mkdir()
    os.symlink(secret, folder / "main.py")
    path = _write(folder, [{"path": "main.py"}], {})
    with pytest.raises(SpecError) as caught:
        load_solution(path)
    assert "leads outside the solution's folder" in caught.value.issues[0].message


def test_validate_reports_the_missing_file_in_one_line(tmp_path: Path):
    path = _write(tmp_path / "s", [{"path": "kernel.py"}], {})
    done = subprocess.run([sys.executable, "-m", "solbench.cli", "validate", str(path)], capture_output=True, text=True)
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if "kernel.py" in line]
    assert len(lines) == 1 and str(path) in lines[0] and "sources.0.content" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
