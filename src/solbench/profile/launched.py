"""The solution's worker started under a launcher (ncu, compute-sanitizer) for one piece of work, and
the worker pair as it was afterwards."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator


@dataclass
class Launched:
    processes: list[Any] = field(default_factory=list)  # the workers started under the launcher
    codes: list[int | None] = field(default_factory=list)  # their exit codes (None: killed after finish_timeout_s)


@contextlib.contextmanager
def launched_under(pair: Any, solution: Any, launcher: Any, finish_timeout_s: float, close: Callable[[], None]) -> Iterator[Launched]:
    """Within the block the solution's workers start under `launcher`, outputs come back through host
    files (CUDA IPC of what a launcher watches is not what is measured). On leaving: each such worker
    asked to exit and waited for (a launcher writes its report as its program ends), `close()`, then
    the pair's launcher, IPC and environment as they were."""
    saved_ipc, saved_environment = pair.ipc, dict(pair.environment)
    pair.launch_under(solution, launcher)
    pair.ipc = False
    found = Launched()
    try:
        yield found
    finally:
        found.processes = list(pair.launched)
        found.codes = [process.finish(finish_timeout_s) for process in found.processes]
        close()
        pair.launch_under(solution, None)
        pair.ipc = saved_ipc
        pair.environment.clear()
        pair.environment.update(saved_environment)


def read_log(path: Any) -> str:
    """A file a launched worker or its launcher wrote ("" when there is none)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def first_line(text: str | None) -> str:
    """The first line of a message, at most 300 characters."""
    return ((text or "").strip().splitlines() or [""])[0][:300]
