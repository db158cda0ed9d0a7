"""Traces as they come back from jobs running anywhere: kept per job, handed on in arrival or job order."""

from __future__ import annotations

from typing import Callable

from solbench.data.trace import Trace


class Collector:
    """Gathers each job's traces. With ordered=False on_trace sees each trace as it arrives; with
    ordered=True it sees them in job order (a job's traces as they arrive once every earlier job has
    finished), so a file written from on_trace has the same order however many lanes ran."""

    def __init__(self, count: int, on_trace: Callable[[int, Trace], None] | None, ordered: bool = False,
                 on_finished: Callable[[int], None] | None = None):
        self.traces: list[list[Trace]] = [[] for _ in range(count)]
        self.finished = [False] * count
        self._on_trace, self._ordered, self._on_finished = on_trace, ordered, on_finished
        self._delivered = [0] * count
        self._cursor = 0
        self._reported = 0  # jobs handed to on_finished so far: a prefix, in job order

    def add(self, index: int, trace: Trace) -> None:
        self.traces[index].append(trace)
        self._deliver()

    def finish(self, index: int) -> None:
        self.finished[index] = True
        self._deliver()

    def done_uuids(self, index: int) -> frozenset[str]:
        return frozenset(trace.workload.uuid for trace in self.traces[index])

    def all_finished(self) -> bool:
        return all(self.finished)

    def results(self) -> list[Trace]:
        return [trace for traces in self.traces for trace in traces]

    def _deliver(self) -> None:
        indices = range(len(self.traces)) if not self._ordered else self._ordered_indices()
        for index in indices:
            for trace in self.traces[index][self._delivered[index]:]:
                self._delivered[index] += 1
                if self._on_trace is not None:
                    self._on_trace(index, trace)
        self._report_finished()

    def _report_finished(self) -> None:
        """on_finished for each job, in job order, once it and every earlier job have finished and
        their traces have all been handed on."""
        while (self._on_finished is not None and self._reported < len(self.traces) and self.finished[self._reported]
               and self._delivered[self._reported] == len(self.traces[self._reported])):
            self._reported += 1
            self._on_finished(self._reported - 1)

    def _ordered_indices(self) -> list[int]:
        """Jobs whose traces may go out now: the finished prefix and the first unfinished job."""
        while self._cursor < len(self.traces) and self.finished[self._cursor] and self._delivered[self._cursor] == len(self.traces[self._cursor]):
            self._cursor += 1
        indices = []
        for index in range(self._cursor, len(self.traces)):
            indices.append(index)
            if not self.finished[index]:
                break
        return indices
