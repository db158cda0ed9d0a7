"""The proposer that needs no model: it tries the registered solutions of the problem, then the
reference under each torch.compile mode, one per attempt, and is exhausted when all are tried (so the
loop, its run folder and its report are useful offline)."""

from __future__ import annotations

from typing import Sequence

from solbench.data.definition import Definition
from solbench.data.problem import Problem
from solbench.data.solution import Solution
from solbench.optimize.messages import ProblemBrief, Proposal, Turn

GPU_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead", "max-autotune")
CPU_MODES = ("default",)  # inductor's C++ builds take tens of seconds each on a CPU


def default_modes(device: str) -> tuple[str, ...]:
    return GPU_MODES if device.startswith("cuda") else CPU_MODES


class BuiltinProposer:
    label = "builtin"

    def __init__(self, problem: Problem, registered: Sequence[Solution] = (), compile_modes: Sequence[str] = CPU_MODES):
        from solbench.bench.verify import compiled_reference

        self.candidates: list[tuple[str, Solution]] = [(f"registered:{s.name}", s) for s in registered if s.definition == problem.name]
        self.candidates += [(f"compile:{mode}", compiled_reference(problem, mode)) for mode in compile_modes]

    def propose(self, brief: ProblemBrief, definition: Definition, history: Sequence[Turn], name: str) -> Proposal:
        tried = {turn.proposal.candidate for turn in history}
        for candidate, solution in self.candidates:
            if candidate not in tried:
                renamed = solution.model_copy(update={"name": name, "description": f"{candidate}: {solution.description}".strip()})
                return Proposal(solution=renamed, candidate=candidate, reply=f"built-in candidate {candidate}")
        return Proposal(reason="the built-in proposer has tried every candidate (registered solutions and torch.compile modes)", exhausted=True)
