"""`solbench report RUN_DIR [--open]`: in-process through typer's CliRunner, and --open as a real
subprocess with a browser command of our own ($BROWSER)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from solbench.cli import app
from solbench.report.sample import sample_summary


def _run(*args: str):
    return CliRunner().invoke(app, ["report", *map(str, args)], env={"COLUMNS": "200"}, catch_exceptions=False)


def _run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "summary.json").write_text(sample_summary(4).to_json(), encoding="utf-8")
    return folder


def test_report_writes_both_files_and_prints_their_paths(tmp_path):
    folder = _run_folder(tmp_path)
    result = _run(folder)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [str(folder / "report.md"), str(folder / "report.html")]
    assert "report written in" in result.stderr
    assert (folder / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_bad_run_folders_are_one_line_naming_the_file(tmp_path):
    cases = {tmp_path / "absent": "no such run folder", tmp_path / "empty": "summary.json: missing", tmp_path / "broken": "summary.json: not a valid run summary"}
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "summary.json").write_text('{"created": "x", "device": 3, "workloads": [{}]}', encoding="utf-8")
    for folder, expected in cases.items():
        result = _run(folder)
        lines = result.stderr.splitlines()
        assert result.exit_code == 1 and len(lines) == 1, result.output
        assert lines[0].startswith(str(folder)) and expected in lines[0] and "Traceback" not in result.output


def test_a_foreign_report_file_is_refused(tmp_path):
    folder = _run_folder(tmp_path)
    (folder / "report.md").write_text("my notes\n", encoding="utf-8")
    result = _run(folder)
    assert result.exit_code == 1
    assert result.stderr.strip() == f"{folder / 'report.md'}: exists and is not a previous report of this run; move it away (solbench report never overwrites other files)"


def test_open_hands_the_report_to_the_browser(tmp_path):
    folder = _run_folder(tmp_path)
    opened = tmp_path / "opened.txt"
    browser = f"{sys.executable} -c \"import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])\" {opened} %s"
    result = subprocess.run([sys.executable, "-m", "solbench.cli", "report", str(folder), "--open"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "BROWSER": browser})
    assert result.returncode == 0, result.stderr
    assert opened.read_text() == (folder / "report.html").resolve().as_uri()
