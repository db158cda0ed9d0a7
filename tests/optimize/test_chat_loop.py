"""The loop driven by a real chat-completions server on loopback, with the real evaluator on the CPU:
scripted replies (a broken solution, a timer-patching exploit, one specialised to the published shape,
a reply without a solution, an honest one); the loop is cut after three attempts (the third one's
record lost, as if killed while evaluating it) and resumed."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image

from solbench.data.hidden import is_held_out
from solbench.data.loaders import load_solution, load_traces
from solbench.optimize import LoopSettings, optimize
from solbench.optimize.chat import ChatProposer
from solbench.sol.hardware import get_hardware

from optimize_testkit import OPTIONS, exploit_source


def fenced(source: str, words: str = "Here is my solution.") -> str:
    return f"{words}\n\n```python\n{source}```\n"


HONEST = "import torch\n\n\ndef run(x, alpha, y):\n    torch.mul(x, alpha, out=y)\n"
BROKEN = "def run(x, alpha):\n    return x * alpha + 1.0\n"
SPECIALISED = ("import torch\n\n\ndef run(x, alpha, y):\n    if x.numel() == 48:\n        torch.mul(x, alpha, out=y)\n"
               "    else:\n        y.zero_()\n")
REPLIES = [fenced(BROKEN), fenced(exploit_source("04_patch_perf_counter.json"), "A steadier clock."), fenced(SPECIALISED),
           "I am not sure what to write.", fenced(HONEST, "Back to basics.")]


def test_chat_loop_flags_exploits_feeds_back_and_resumes(problem, chat_server, tmp_path: Path) -> None:
    server = chat_server(REPLIES)
    run = tmp_path / "run"
    spec = get_hardware("H200")
    first = optimize(problem, ChatProposer(server.url, "scripted"), OPTIONS, spec, run, LoopSettings(iterations=3))
    assert [r.attempt for r in first.records] == [1, 2, 3] and first.error is None
    # cut short while attempt 3 was evaluated: its proposal is saved, its record is not
    lines = (run / "attempts.jsonl").read_text().splitlines()
    (run / "attempts.jsonl").write_text("\n".join(lines[:2]) + "\n")
    kept = json.loads(lines[0])["finished"]

    second = optimize(problem, ChatProposer(server.url), OPTIONS, spec, run, LoopSettings(iterations=5, resume=True))
    records = second.records
    assert [r.attempt for r in records] == [1, 2, 3, 4, 5]
    assert len(server.requests) == 5  # attempt 3 was evaluated again from its saved proposal, not asked again
    assert records[0].finished == kept  # finished attempts are not redone
    statuses = [r.feedback.status for r in records]
    assert statuses == ["INCORRECT_NUMERICAL", "REWARD_HACK", "REWARD_HACK", "NO_SOLUTION", "PASSED"], statuses
    assert any(f.rule.startswith("PY-PATCH") and f.severity == "reject" for f in records[1].feedback.audit)
    assert records[2].held_out_statuses.get("REWARD_HACK") and records[2].feedback.held_out and not records[2].feedback.held_out.passed
    assert [r.eligible for r in records] == [False, False, False, False, True]

    # the honest one is the best; the exploits never were
    assert second.best is not None and second.best.attempt == 5
    assert load_solution(run / "best" / "solution.json").sources[0].content == HONEST
    assert (run / "attempts" / "005" / "solution.json").is_file() and (run / "attempts" / "004" / "proposal.json").is_file()

    # each request after the first carries the previous attempt's status and message
    for attempt, body in enumerate(server.requests[1:], start=1):
        last = body["messages"][-1]["content"]
        previous = records[attempt - 1].feedback
        assert f"Feedback on attempt {attempt}:" in last and previous.status in last
        assert previous.message.splitlines()[0][:60] in last.replace('\\"', '"') or json.dumps(previous.message)[1:61] in last
    assert "holds no solution" in server.requests[4]["messages"][-1]["content"]
    assert body["messages"][-2]["content"] == REPLIES[3]  # the model's own reply is in the conversation

    # nothing of a held-out workload ever reached the server
    held_out = [t for attempt in range(1, 6) for t in load_traces_or_none(run / "attempts" / f"{attempt:03d}" / "traces.jsonl") if is_held_out(t.workload.uuid)]
    assert held_out and {t.workload.axes["N"] for t in held_out} - {48}
    text = "\n".join(server.contents())
    for trace in held_out:
        assert trace.workload.uuid not in text
        if trace.workload.axes["N"] != 48:
            assert f'"N": {trace.workload.axes["N"]}' not in text
    for record in records:
        assert all(not is_held_out(w.uuid) for w in record.feedback.workloads)

    # the plot and the report
    png = (run / "score.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    image = matplotlib.image.imread(run / "score.png")
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    report = (run / "report.md").read_text()
    assert "Best: attempt 5" in report and report.count("\n| ") >= 6


def load_traces_or_none(path: Path) -> list:
    return load_traces(path) if path.is_file() else []
