"""Where a run keeps its profiles: RUN_DIR/profiles/<problem>/<solution>.json, beside its traces."""

from __future__ import annotations

from pathlib import Path

from solbench.data.errors import SpecError
from solbench.data.files import write_text_safely
from solbench.profile.model import ProfileReport, load_profile

PROFILES = "profiles"


def profile_path(run_dir: Path, problem: str, solution: str) -> Path:
    return Path(run_dir) / PROFILES / problem / f"{solution}.json"


def write_profile(run_dir: Path, report: ProfileReport) -> Path:
    """Store the profile (a later profile of the same solution replaces it)."""
    path = profile_path(run_dir, report.problem, report.solution)
    write_text_safely(path, report.to_json_text(), overwrite=True)
    return path


def run_profiles(run_dir: Path) -> tuple[list[ProfileReport], list[str]]:
    """The run's stored profiles (by problem, then solution) and one line per file that is not one."""
    found, problems = [], []
    for path in sorted((Path(run_dir) / PROFILES).glob("*/*.json")):
        try:
            found.append(load_profile(path))
        except SpecError as exc:
            problems.append(str(exc))
    return found, problems
