"""Datasets and problems by content: each served path is loaded, every problem hashed (definition and
workloads), the dataset hashed over its problems, and rows made for content not seen before. The
same name with other content is a new dataset row, so its results form boards of their own."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from solbench.data.problem import Problem as LoadedProblem
from solbench.serve.models import Dataset, Problem

BUNDLED = "bundled"


class CatalogError(RuntimeError):
    """A dataset that cannot be served: one line."""


@dataclass
class Served:
    """A dataset this process serves: its row id and its problems by row id."""

    dataset_id: int
    name: str
    problems: dict[int, LoadedProblem]


def problem_hash(problem: LoadedProblem) -> str:
    content = {"definition": problem.definition.to_json_dict(), "workloads": [w.to_json_dict() for w in problem.workloads]}
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def dataset_hash(hashes: dict[str, str]) -> str:
    return hashlib.sha256("".join(f"{name}:{digest}\n" for name, digest in sorted(hashes.items())).encode()).hexdigest()


def resolve(paths: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(dataset name, folder) per --dataset value; none given: the bundled problems."""
    from solbench.dataset import bundled_problems_path, resolve_set_paths

    if not paths:
        return [(BUNDLED, bundled_problems_path())]
    return [(str(given).removeprefix("solbench:") if str(given).startswith("solbench:") else Path(given).name or str(given), path)
            for given, path in zip(paths, resolve_set_paths([Path(p) for p in paths]))]


def load(path: Path) -> list[LoadedProblem]:
    """The problems under a path; each refused one is a line on stderr and the others are served."""
    from solbench.data.loaders import flag_duplicate_names, scan

    if not path.exists():
        raise CatalogError(f"--dataset {path}: does not exist")
    found = scan(path)
    flag_duplicate_names(found)
    for loaded in found:
        if not loaded.ok and loaded.kind not in {"solution", "traces"}:
            first = next(iter(loaded.errors), "refused")
            print(f"serve: {loaded.path}: not served: {first}", file=sys.stderr)
    return [loaded.problem for loaded in found if loaded.ok and loaded.problem is not None]


def sync(session: Session, name: str, path: Path, problems: list[LoadedProblem]) -> Served:
    """The dataset's row (made if its content is new) and its problems' rows."""
    from solbench.score.categories import categories_of

    hashes = {problem.name: problem_hash(problem) for problem in problems}
    content = dataset_hash(hashes)
    row = session.scalar(select(Dataset).where(Dataset.name == name, Dataset.content_hash == content))
    if row is None:
        row = Dataset(name=name, path=str(path), content_hash=content, created=time.time())
        session.add(row)
        session.flush()
    existing = {p.name: p for p in session.scalars(select(Problem).where(Problem.dataset_id == row.id))}
    served: dict[int, LoadedProblem] = {}
    for problem in problems:
        record = existing.get(problem.name)
        if record is None:
            record = Problem(dataset_id=row.id, name=problem.name, content_hash=hashes[problem.name],
                             description=problem.definition.description or "", categories=json.dumps(categories_of(problem)),
                             workloads=len(problem.workloads))
            session.add(record)
            session.flush()
        served[record.id] = problem
    return Served(row.id, name, served)


def serve_datasets(session: Session, paths: tuple[str, ...]) -> list[Served]:
    return [sync(session, name, path, load(path)) for name, path in resolve(paths)]
