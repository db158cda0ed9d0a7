"""Rooflines drawn in worker processes, for large reports (matplotlib draws on one core).

Each worker is a fresh `python -m solbench.report.roofline_worker` that reads its chunk (pickled)
on stdin and writes its Rooflines (pickled) on stdout. Plain subprocesses rather than a
multiprocessing pool: a pool re-imports the caller's main module (a script without a __main__
guard would run again) or forks a caller that may hold threads (torch's, in `solbench run`).
A worker that fails costs only time: its chunk is drawn here instead.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

from solbench.report.roofline import Roofline, draw_rooflines
from solbench.score.summary import WorkloadScore

Chunk = tuple[int, list[tuple[str, list[WorkloadScore]]]]  # (index of its first problem, problems)


def draw_in_processes(roofs: dict[str, float], solution_sets: list[str], chunks: list[Chunk]) -> list[Roofline]:
    """The rooflines of every chunk, in order, one worker process per chunk."""
    workers = []
    for start, problems in chunks:
        process = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            pickle.dump({"roofs": roofs, "solution_sets": solution_sets, "problems": problems, "first_key": start}, process.stdin)
            process.stdin.close()
        except BrokenPipeError:
            pass
        workers.append(process)
    drawn: list[Roofline] = []
    for process, (start, problems) in zip(workers, chunks):
        output = process.stdout.read()
        process.stdout.close()
        found = None
        if process.wait() == 0:
            try:
                found = pickle.loads(output)
            except (pickle.UnpicklingError, EOFError):
                found = None
        drawn += found if found is not None and len(found) == len(problems) else draw_rooflines(roofs, solution_sets, problems, start)
    return drawn


def _main() -> None:
    job = pickle.load(sys.stdin.buffer)
    pickle.dump(draw_rooflines(**job), sys.stdout.buffer)


if __name__ == "__main__":
    _main()
