"""`solbench dataset characterise DIR`: a row of dimensions per problem, written to an index file.

The SOL analysis of one representative workload per problem is the slow part: problems are shared
among worker processes (as `solbench sol` does), a rich progress bar counts them, and a problem
whose analysis fails keeps its row with the error in it. Rows of problems whose files did not
change since the index was written are reused (their digest matches), unless `fresh`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from pydantic import ValidationError

from solbench.data.errors import Issue, SpecError
from solbench.data.files import dump_json, read_json, write_atomically
from solbench.data.loaders import flag_duplicate_names, scan
from solbench.data.problem import Problem
from solbench.dataset.catalog.analyse import WORKLOAD_CHOICES, characterise_problem, digest, relative_path
from solbench.dataset.catalog.row import INDEX_FORMAT, Index, ProblemRow

INDEX_FILE = "index.json"
DEFAULT_HARDWARE = "H200"


def index_path(folder: Path, output: Path | None = None) -> Path:
    return output if output is not None else folder / INDEX_FILE


def read_index(path: Path) -> Index:
    """The index at path; SpecError (one line) when it is not one this tool wrote or does not parse."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        raise SpecError(f"not an index written by solbench dataset characterise (expected format {INDEX_FORMAT!r}); "
                        "pass --index FILE to keep the index elsewhere", path=path, field="format")
    try:
        return Index.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise SpecError(f"{first['msg']} (this index may be from another version: characterise again with --force)", path=path, field=where) from None


def is_ours(path: Path) -> bool:
    """Whether path holds an index this tool wrote (which it may therefore replace)."""
    try:
        data = read_json(path)
    except SpecError:
        return False
    return isinstance(data, dict) and data.get("format") == INDEX_FORMAT


def check_writable(path: Path, force: bool) -> None:
    """Refuse to replace a file that this tool did not write, unless forced."""
    if path.exists() and (path.is_dir() or (not force and not is_ours(path))):
        what = "is a folder" if path.is_dir() else "exists and is not an index written by solbench dataset characterise"
        raise SpecError(f"{what}; refusing to overwrite it" + ("" if path.is_dir() else " (pass --force to replace it)"), path=path)


def load_folder(folder: Path, issues: list[Issue] | None = None) -> list[Problem]:
    """The problems under folder. One that does not load is an issue (appended to `issues` when given, so that
    the others go on; raised otherwise). Index files this tool wrote are skipped (solbench's loaders take every
    .json in a dataset folder for a definition or a solution)."""
    if not folder.exists():
        raise SpecError("does not exist: expected a folder of problems", path=folder)
    if not folder.is_dir():
        raise SpecError("is not a folder: expected a folder of problems (problem folders, optionally in subset folders)", path=folder)
    found = [loaded for loaded in scan(folder, synthesize_missing_blobs=True)
             if not (loaded.path.suffix == ".json" and loaded.path.is_file() and is_ours(loaded.path))]
    flag_duplicate_names(found)
    problems = [loaded.problem for loaded in found if loaded.problem is not None]
    errors = [issue for loaded in found if loaded.kind not in {"solution", "traces"} for issue in loaded.errors]
    if errors and issues is None:
        raise SpecError(errors)
    if issues is not None:
        issues += errors
    if not problems:
        raise SpecError(errors or "holds no problem", path=None if errors else folder)
    return problems


def characterise(folder: Path, *, hardware: str = DEFAULT_HARDWARE, choice: str = "median", jobs: int = 0, previous: Index | None = None,
                 progress: bool = False, policy: str = "auto", issues: list[Issue] | None = None) -> Index:
    """The index of every problem under folder (rows sorted by path); rows of `previous` whose digest,
    hardware and workload choice still match are reused."""
    from solbench.sol.hardware import get_hardware

    if choice not in WORKLOAD_CHOICES:
        raise SpecError(f"expected one of {', '.join(WORKLOAD_CHOICES)}, got {choice!r}", field="workload")
    spec = get_hardware(hardware)
    problems = load_folder(folder, issues)
    reusable: dict[tuple[str, str], ProblemRow] = {}
    if previous is not None and previous.hardware == spec.name and previous.workload_choice == choice:
        reusable = {(row.path, row.digest): row for row in previous.problems}
    rows: list[ProblemRow] = []
    todo: list[Problem] = []
    for problem in problems:
        known = reusable.get((relative_path(problem, folder), digest(problem)))
        if known is not None and known.subset == problem.subset:
            rows.append(known)
        else:
            todo.append(problem)
    with _bar(len(todo), progress) as advance:
        for row in _analyse_all(todo, folder.resolve(), spec, choice, policy, jobs):
            rows.append(row)
            advance(row.name)
    rows.sort(key=lambda row: row.path)
    return Index(hardware=spec.name, workload_choice=choice, problems=rows)


def write_index(index: Index, path: Path, force: bool = False) -> None:
    check_writable(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, dump_json(index.model_dump(mode="json")))


def index_for(folder: Path, *, output: Path | None = None, write: bool = True, hardware: str = DEFAULT_HARDWARE, jobs: int = 0,
              progress: bool = False, on_note: Callable[[str], None] = lambda line: None, issues: list[Issue] | None = None) -> Index:
    """The folder's index: read when present and current, else characterised (only what changed) and,
    with write, saved where it belongs. stats and sample use this."""
    path = index_path(folder, output)
    previous = None
    if path.exists():
        previous = read_index(path)
        problems = load_folder(folder, [])
        current = {(relative_path(p, folder), digest(p)) for p in problems}
        if current == {(row.path, row.digest) for row in previous.problems}:
            return previous
        on_note(f"{path}: out of date with {folder}; characterising what changed")
    elif write:
        on_note(f"{path}: no index yet; characterising {folder} first")
    else:
        on_note(f"characterising {folder} (the index is kept in memory)")
    index = characterise(folder, hardware=previous.hardware if previous else hardware, jobs=jobs, previous=previous, progress=progress,
                         choice=previous.workload_choice if previous else "median", issues=issues)
    if write:
        write_index(index, path)
        on_note(f"wrote {path}")
    return index


def default_jobs(count: int) -> int:
    from solbench.sol.api import default_jobs as sol_jobs

    return sol_jobs(count)


def _analyse_all(problems: list[Problem], root: Path, spec: object, choice: str, policy: str, jobs: int) -> Iterator[ProblemRow]:
    """Rows as they are done (in any order); in worker processes when there are enough problems."""
    jobs = jobs or default_jobs(len(problems))
    tasks = [(problem, root, spec, choice, policy) for problem in problems]
    if jobs <= 1 or len(tasks) < 4:
        yield from map(_task, tasks)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from solbench.sol.api import _expected_cost

    order = sorted(tasks, key=lambda task: -_expected_cost(task[0], 1))  # slow-looking ones first, so no worker is left with one at the end
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_task, task) for task in order]
        for future in as_completed(futures):
            yield future.result()


def _task(task: tuple) -> ProblemRow:
    problem, root, spec, choice, policy = task
    return characterise_problem(problem, root, spec, choice, policy)


class _bar:
    """A rich progress bar on stderr (stdout stays for results), counting problems."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled and total > 0

    def __enter__(self) -> Callable[[str], None]:
        if not self.enabled:
            return lambda name: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("characterising"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                  TextColumn("{task.fields[last]}"), console=Console(stderr=True), transient=True)
        self._progress.start()
        task = self._progress.add_task("characterising", total=self.total, last="")
        return lambda name: self._progress.update(task, advance=1, last=name)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._progress.stop()
