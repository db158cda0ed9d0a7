"""The optimisation loop (`solbench optimize`): a proposer (an OpenAI-compatible chat endpoint, or the
built-in one that needs no model) is given a problem's brief, returns a solution, gets the evaluator's
feedback on it and tries again. Every attempt goes through the hardened evaluator with every defence
on; the held-out workloads it draws are never shown to the proposer.

Modules, one job each: `messages` (the pydantic models exchanged with proposers), `brief` (what a
proposer is told about a problem), `feedback` (what it is told after an attempt), `replies` (a chat
reply to a solution), `chat` and `builtin` (the proposers), `proposers` (their common interface),
`state` (the run folder and resuming), `loop` (the loop itself), `report` (the plot and the markdown).
"""

from solbench.optimize.loop import LoopSettings, LoopOutcome, optimize

__all__ = ["LoopOutcome", "LoopSettings", "optimize"]
