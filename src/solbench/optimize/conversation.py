"""The chat a model sees: a system message with the rules of the game, the problem's brief, then for each
finished attempt the model's own reply and the feedback on it (the last MAX_TURNS of them; older ones in
one line each)."""

from __future__ import annotations

import json
from typing import Sequence

from solbench.optimize.messages import ProblemBrief, Turn

MAX_TURNS = 8  # attempts shown in full; older ones are summarised in one line each

SYSTEM = """You write fast, correct implementations of PyTorch reference functions for solbench, which scores
them against the hardware's speed of light (T_SOL): score 0.5 at the baseline (the eager reference),
1.0 at T_SOL. Reply with exactly one solution, either:
- a fenced ```python block defining a top-level run(...) whose parameters are the inputs in the given
  order; either return the outputs (in the given order), or take the preallocated outputs after the
  inputs and write into them (destination-passing style); Triton kernels are welcome; or
- a fenced ```json solution object with "spec" (languages, entry_point "file::function",
  destination_passing_style) and "sources" (a list of {"path", "content"}), for CUDA C++ or several files.
Every attempt is checked on fresh random inputs, on held-out shapes you are not shown and on calls
chosen at random while it is timed. Specialising to the published shapes, caching results across
calls, reading the reference's outputs, or touching timers and the harness is detected (REWARD_HACK)
and never counts."""


def chat_messages(brief: ProblemBrief, history: Sequence[Turn]) -> list[dict[str, str]]:
    """The messages of a chat-completions request for the next attempt."""
    brief_json = json.dumps(brief.model_dump(mode="json"), indent=1)
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"The problem:\n```json\n{brief_json}\n```\nWrite the first solution."}]
    if not history:
        return messages
    shown = list(history[-MAX_TURNS:])
    older = list(history[: len(history) - len(shown)])
    for position, turn in enumerate(shown):
        messages.append({"role": "assistant", "content": turn.proposal.reply or f"(proposal: {turn.proposal.candidate or 'none'})"})
        feedback = json.dumps(turn.feedback.model_dump(mode="json", exclude_none=True), indent=1)
        text = f"Feedback on attempt {turn.feedback.attempt}:\n```json\n{feedback}\n```\n"
        if position == len(shown) - 1:
            text += _standing(history, older) + "Write an improved solution."
        messages.append({"role": "user", "content": text})
    return messages


def _standing(history: Sequence[Turn], older: Sequence[Turn]) -> str:
    lines = []
    if older:
        lines.append("Earlier attempts: " + "; ".join(f"{t.feedback.attempt}: {t.feedback.status} score {_score(t.feedback.score)}" for t in older))
    scored = [t.feedback for t in history if t.feedback.status == "PASSED" and t.feedback.score is not None]
    if scored:
        best = max(scored, key=lambda f: f.score or 0.0)
        lines.append(f"Best passing score so far: {_score(best.score)} (attempt {best.attempt}).")
    return "".join(line + "\n" for line in lines)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
