"""A chat reply to a solution: fenced JSON solutions, fenced Python sources (style from run's
parameters), and the reason fed back when a reply holds neither."""

from __future__ import annotations

import json

from solbench.optimize.replies import solution_from_reply

from optimize_testkit import make_problem

DEFINITION = make_problem().definition


def test_python_block_becomes_a_solution_in_the_style_of_its_run() -> None:
    dps, why = solution_from_reply("text\n```python\nimport torch\ndef run(x, alpha, y):\n    torch.mul(x, alpha, out=y)\n```", DEFINITION, "a-1")
    assert why == "" and dps is not None and dps.spec.destination_passing_style and dps.name == "a-1" and dps.definition == "opt_scale"
    returning, _ = solution_from_reply("```py\ndef run(x, alpha):\n    return x * alpha\n```", DEFINITION, "a-2")
    assert returning is not None and not returning.spec.destination_passing_style
    triton, _ = solution_from_reply("```python\nimport triton\ndef run(x, alpha):\n    return x * alpha\n```", DEFINITION, "a-3")
    assert triton is not None and triton.spec.languages[0].value == "triton"


def test_json_block_wins_and_is_renamed_to_the_attempt() -> None:
    solution = {"name": "whatever", "definition": "other", "spec": {"languages": ["pytorch"], "entry_point": "k.py::run"},
                "sources": [{"path": "k.py", "content": "def run(x, alpha, y):\n    y.copy_(x * alpha)\n"}]}
    found, why = solution_from_reply(f"```python\ndef run(x):\n    pass\n```\n```json\n{json.dumps(solution)}\n```", DEFINITION, "a-4")
    assert why == "" and found is not None and found.name == "a-4" and found.definition == "opt_scale" and found.spec.entry_point == "k.py::run"


def test_replies_without_a_solution_say_why() -> None:
    assert "holds no solution" in solution_from_reply("I would use a kernel.", DEFINITION, "a")[1]
    assert "run takes 1 parameters; expected 2" in solution_from_reply("```python\ndef run(x):\n    return x\n```", DEFINITION, "a")[1]
    assert "does not parse: line 1" in solution_from_reply("```python\ndef run(:\n```", DEFINITION, "a")[1]
    assert "not valid JSON" in solution_from_reply("```json\n{nope\n```", DEFINITION, "a")[1]
    bad = {"spec": {"languages": ["pytorch"], "entry_point": "missing.py::run"}, "sources": [{"path": "k.py", "content": ""}]}
    assert "entry file 'missing.py'" in solution_from_reply(f"```json\n{json.dumps(bad)}\n```", DEFINITION, "a")[1]
