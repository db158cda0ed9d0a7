"""What loading one path gives: the object it holds, or the issues that stopped it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from solbench.data.errors import Issue
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.data.trace import Trace


@dataclass
class Loaded:
    path: Path
    kind: str  # problem | kernelbench | flashinfer | solution | traces | unknown
    name: str | None = None
    problem: Problem | None = None
    solution: Solution | None = None
    traces: list[Trace] | None = None
    issues: list[Issue] = field(default_factory=list)
    subset: str | None = None  # the dataset subset folder it was found in (also when it did not load)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors
