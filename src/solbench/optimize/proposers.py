"""What every proposer offers the loop: `propose(brief, history)` -> Proposal, where history holds every
finished attempt (its proposal and the feedback on it), oldest first."""

from __future__ import annotations

from typing import Protocol, Sequence

from solbench.data.definition import Definition
from solbench.optimize.messages import ProblemBrief, Proposal, Turn


class ProposerError(Exception):
    """The proposer cannot answer at all (an endpoint that cannot be reached, a refusal): the loop stops
    here, keeping every finished attempt (resume later). One line."""


class Proposer(Protocol):
    label: str  # what the run folder and the report call it (a URL and model, or "builtin")

    def propose(self, brief: ProblemBrief, definition: Definition, history: Sequence[Turn], name: str) -> Proposal:
        """The next solution, named `name` (or a Proposal without one, saying why)."""
        ...
