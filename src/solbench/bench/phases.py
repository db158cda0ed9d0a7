"""Where an evaluation's time goes: seconds per phase, collected as it runs and handed to each trace."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

# The phases a trace records (seconds); "sol" is the speed-of-light analysis of the workload (the
# problem's capture is made on its first workload); "device wait" is a timed section's wait for other
# evaluations' correctness work on the same device (run --concurrent); "energy" the energy windows (--energy, solbench.energy);
# "memcheck" the solution's evaluation under compute-sanitizer (--memcheck, the run's, in its first trace);
# "other" is the rest of the workload's wall time.
PHASES = ("start", "build", "memcheck", "inputs", "reference", "correctness", "precision", "timing", "energy", "device wait", "verify", "sol",
          "other")


class PhaseClock:
    """Seconds per phase since the last `take`; a phase may be entered many times (they add up)."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(phase, time.perf_counter() - started)

    def add(self, phase: str, seconds: float) -> None:
        self._seconds[phase] = self._seconds.get(phase, 0.0) + max(0.0, seconds)

    def move(self, source: str, target: str, seconds: float) -> None:
        """Count `seconds` of what was timed as `source` under `target` instead (a worker's own breakdown)."""
        seconds = min(max(0.0, seconds), self._seconds.get(source, 0.0))
        self._seconds[source] = self._seconds.get(source, 0.0) - seconds
        self.add(target, seconds)

    def take(self, wall_s: float | None = None) -> dict[str, float]:
        """The phases so far (rounded to microseconds), then start afresh; with the workload's wall
        time, what no phase accounts for is "other"."""
        seconds, self._seconds = self._seconds, {}
        if wall_s is not None:
            accounted = sum(value for name, value in seconds.items() if name not in ("start", "build"))
            seconds["other"] = max(0.0, wall_s - accounted)
        return {name: round(value, 6) for name, value in seconds.items()}
