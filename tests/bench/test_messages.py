"""The worker protocol's messages are validated on receipt: a bad message is one line naming the field."""

from __future__ import annotations

import pytest

from solbench.bench.messages import MalformedMessage, RunRequest, TimeAnswer, parse_answer, parse_request, to_wire
from solbench.data.workload import Workload


def test_a_request_survives_the_wire():
    workload = Workload.model_validate({"uuid": "w", "axes": {"n": 4}, "inputs": {"x": {"type": "random"}}, "tolerance": {"max_atol": 0.5}})
    request = RunRequest(workload=workload, seed=3, trial=1, outputs={"y": {"shape": [4], "dtype": "float32"}}, dps=True, paths={"y": "/p"})
    parsed = parse_request("run", {"cmd": "run", "nonce": "n", **to_wire(request)})
    assert parsed == request and parsed.workload.effective_tolerance.max_atol == 0.5


def test_a_malformed_answer_names_the_command_and_the_field():
    good = {"ok": True, "nonce": "n", "times_ms": [1.0, 2.0], "method": "wall", "checked": {"1": {}}, "calls": 2}
    assert isinstance(parse_answer("time", good), TimeAnswer)
    with pytest.raises(MalformedMessage, match=r"^time answer: times_ms: List should have at least 1 item"):
        parse_answer("time", {**good, "times_ms": []})
    with pytest.raises(MalformedMessage, match=r"^time answer: calls: "):
        parse_answer("time", {**good, "calls": "two"})
    with pytest.raises(MalformedMessage, match=r"^time answer: forged: Extra inputs are not permitted"):
        parse_answer("time", {**good, "forged": 1})
    with pytest.raises(MalformedMessage, match="unknown command 'steal'"):
        parse_answer("steal", good)
