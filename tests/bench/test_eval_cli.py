"""`solbench eval` and `solbench run`, as real subprocesses (`python -m solbench.cli`) on the small problem
tests/fixtures/solutions/status/vector_scale (workloads vs-n0016, vs-n0064, vs-n1000) with real workers.

The resume test kills an evaluation (SIGKILL) while its second workload runs, resumes it, and compares the
result with an uninterrupted run. Builds go to a per-test cache folder ($SOLBENCH_BUILD_CACHE), never to
the user's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solbench.data.loaders import load_traces
from solbench.data.trace import Status, Trace
from test_evaluate import alive as _alive  # same folder: pytest puts it on sys.path

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "solutions" / "status"
PROBLEM = DATA / "vector_scale"
UUIDS = ["vs-n0016", "vs-n0064", "vs-n1000"]
FAST = ["--device", "cpu", "--trials", "2", "--no-timing", "--seed", "7", "--hidden", "0"]
COMMAND_LIMIT_S = 180


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    variables = {k: v for k, v in os.environ.items() if k not in ("SOLBENCH_TEST_CALLS", "SOLBENCH_DEBUG")}
    variables.update(COLUMNS="200", SOLBENCH_BUILD_CACHE=str(tmp_path / "builds"), PYTHONUNBUFFERED="1")
    return variables


def solbench(env: dict[str, str], *args: object, timeout: float = COMMAND_LIMIT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "solbench.cli", *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout)


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def statuses_by_uuid(traces: list[Trace]) -> dict[str, Status]:
    return {t.workload.uuid: t.evaluation.status for t in traces}


# --- eval ---------------------------------------------------------------------------------------------


def test_eval_json_prints_a_list_of_traces(env: dict[str, str]):
    result = solbench(env, "eval", PROBLEM, "-s", DATA / "pytorch_dps.json", "--json", *FAST)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # stdout is the JSON list and nothing else
    assert isinstance(data, list) and len(data) == 3
    traces = [Trace.model_validate(item) for item in data]
    assert [t.workload.uuid for t in traces] == UUIDS
    for trace in traces:
        assert trace.definition == "vector_scale" and trace.solution == "pytorch_dps"
        evaluation = trace.evaluation
        assert evaluation.status == Status.PASSED
        assert evaluation.correctness.matched_ratio == 1.0 and evaluation.correctness.trials == 2
        assert evaluation.performance is None  # --no-timing
        assert evaluation.environment["seed"] == 7 and evaluation.environment["device"] == "cpu"


def test_eval_prints_a_table_and_writes_the_output_file(env: dict[str, str], tmp_path: Path):
    output = tmp_path / "traces.jsonl"
    result = solbench(env, "eval", PROBLEM, "-s", DATA / "off_by_constant.json", "-o", output, *FAST)
    assert result.returncode == 1, result.stderr  # a workload that is not PASSED: exit code 1
    assert "off_by_constant on vector_scale" in result.stdout
    assert result.stdout.count("INCORRECT_NUMERICAL") == 3
    for uuid in UUIDS:  # one progress line per workload on stderr
        assert f"vector_scale / {uuid}: INCORRECT_NUMERICAL" in result.stderr
    traces = load_traces(output)
    assert statuses_by_uuid(traces) == dict.fromkeys(UUIDS, Status.INCORRECT_NUMERICAL)
    assert len(output.read_text().splitlines()) == 3


def test_eval_of_a_solution_whose_definition_is_not_in_the_path_is_a_one_line_error(env: dict[str, str], tmp_path: Path):
    output = tmp_path / "traces.jsonl"
    result = solbench(env, "eval", DATA / "broken_reference", "-s", DATA / "pytorch_dps.json", "-o", output, *FAST)
    assert result.returncode == 1
    assert error_lines(result) == [f"{DATA / 'broken_reference'}: holds no problem named 'vector_scale' (the solution's definition)"]
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not output.exists()


def test_eval_workload_option_selects_workloads(env: dict[str, str]):
    # a full uuid and a unique prefix of 6+ characters; traces come in the order asked for
    result = solbench(env, "eval", PROBLEM, "-s", DATA / "pytorch_returning.json", "--json", "-w", "vs-n1000", "-w", "vs-n006", *FAST)
    assert result.returncode == 0, result.stderr
    traces = [Trace.model_validate(item) for item in json.loads(result.stdout)]
    assert [t.workload.uuid for t in traces] == ["vs-n1000", "vs-n0064"]
    assert [t.evaluation.status for t in traces] == [Status.PASSED, Status.PASSED]


def test_eval_unknown_workload_is_a_one_line_user_error(env: dict[str, str]):
    result = solbench(env, "eval", PROBLEM, "-s", DATA / "pytorch_dps.json", "-w", "no-such-workload", *FAST)
    assert result.returncode == 1
    lines = error_lines(result)
    assert len(lines) == 1 and "no-such-workload" in lines[0] and "internal error" not in lines[0]


def test_eval_refuses_an_existing_output_file_without_resume(env: dict[str, str], tmp_path: Path):
    output = tmp_path / "traces.jsonl"
    content = b'{"definition": "vector_scale", "note": "not ours to touch"}\n'
    output.write_bytes(content)
    before = output.stat().st_mtime_ns
    result = solbench(env, "eval", PROBLEM, "-s", DATA / "pytorch_dps.json", "-o", output, *FAST)
    assert result.returncode == 1
    assert error_lines(result) == [f"{output}: exists already; pass --resume to continue it, or choose another file"]
    assert output.read_bytes() == content and output.stat().st_mtime_ns == before


# --- resume -------------------------------------------------------------------------------------------


def _calls(path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []
    return [(int(pid), int(n)) for pid, n in (line.split() for line in path.read_text().splitlines() if line.strip())]




def test_eval_resume_after_a_kill_finishes_the_run_without_redoing_work(env: dict[str, str], tmp_path: Path):
    """slow_middle: PASSED on vs-n0016, sleeps 4 s (then PASSED) on vs-n0064, INCORRECT_NUMERICAL on vs-n1000;
    each call appends "pid N" to $SOLBENCH_TEST_CALLS."""
    solution = DATA / "slow_middle.json"
    output = tmp_path / "traces.jsonl"
    arguments = ["eval", PROBLEM, "-s", solution, "-o", output, "--device", "cpu", "--trials", "1", "--no-timing", "--seed", "11", "--hidden", "0", "--sandbox", "none",
                 "--no-static-analysis"]  # slow_middle keeps a call log in a file, which static analysis refuses

    # 1. Start, and kill (SIGKILL) as soon as the first trace line is in the file.
    first_calls = tmp_path / "calls-killed.txt"
    process = subprocess.Popen([sys.executable, "-m", "solbench.cli", *map(str, arguments)], env={**env, "SOLBENCH_TEST_CALLS": str(first_calls)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    session = None  # the killed run's blob folder (/dev/shm/solbench-*): SIGKILL leaves it behind; removed at the end
    try:
        deadline = time.monotonic() + COMMAND_LIMIT_S
        while not (output.exists() and output.read_text().endswith("\n")):
            assert process.poll() is None, f"the run ended before its first trace: {process.stderr.read()}"
            assert time.monotonic() < deadline, "no trace within the time limit"
            time.sleep(0.05)
        try:  # the solution worker (busy with vs-n0064) writes its output into a log file in that folder
            log = Path(os.readlink(f"/proc/{_calls(first_calls)[0][0]}/fd/1"))
            session = log.parent.parent if log.parent.name == "logs" and log.parent.parent.name.startswith("solbench-") else None
        except (OSError, IndexError):
            pass
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)
        process.stderr.close()
    try:
        assert process.returncode == -signal.SIGKILL
        _check_resume(env, tmp_path, output, arguments, first_calls)
    finally:
        if session is not None:
            shutil.rmtree(session, ignore_errors=True)


def _check_resume(env: dict[str, str], tmp_path: Path, output: Path, arguments: list[object], first_calls: Path) -> None:
    partial = output.read_text()
    (first_line,) = partial.splitlines()
    first = Trace.model_validate(json.loads(first_line))
    assert first.workload.uuid == "vs-n0016" and first.evaluation.status == Status.PASSED
    # The orphaned workers go away on their own (their channel to the killed orchestrator is closed).
    killed_workers = {pid for pid, _ in _calls(first_calls)}
    assert killed_workers
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in killed_workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    stray = {pid for pid in killed_workers if _alive(pid)}
    for pid in stray:  # cleanup of our own leftovers before failing
        os.kill(pid, signal.SIGKILL)
    assert not stray, "a worker outlived its killed orchestrator"

    # 2. Resume: the first workload is not evaluated again.
    resumed_calls = tmp_path / "calls-resumed.txt"
    result = solbench({**env, "SOLBENCH_TEST_CALLS": str(resumed_calls)}, *arguments, "--resume")
    assert result.returncode == 1, result.stderr  # vs-n1000 is INCORRECT_NUMERICAL
    assert "1 workload(s) skipped" in result.stdout
    assert "vs-n0016" not in result.stderr  # no progress line for it
    assert sorted({n for _, n in _calls(resumed_calls)}) == [64, 1000]
    final_text = output.read_text()
    assert final_text.startswith(partial)  # appended to, the first trace kept as it was
    final = load_traces(output)
    assert sorted(t.workload.uuid for t in final) == UUIDS  # exactly one trace per workload

    # 3. The same statuses as an uninterrupted run.
    uninterrupted = tmp_path / "uninterrupted.jsonl"
    result = solbench(env, *[uninterrupted if a == output else a for a in arguments])
    assert result.returncode == 1, result.stderr
    expected = {"vs-n0016": Status.PASSED, "vs-n0064": Status.PASSED, "vs-n1000": Status.INCORRECT_NUMERICAL}
    assert statuses_by_uuid(load_traces(uninterrupted)) == expected
    assert statuses_by_uuid(final) == expected


# --- run ----------------------------------------------------------------------------------------------


def test_eval_exits_non_zero_when_every_workload_fails_to_compile(env: dict[str, str]):
    result = solbench(env, "eval", PROBLEM, "-s", DATA / "python_syntax_error.json", *FAST)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.count("COMPILE_ERROR") == 3


def test_eval_honours_solbench_hardware(env: dict[str, str]):
    result = solbench({**env, "SOLBENCH_HARDWARE": "no-such-spec"}, "eval", PROBLEM, "-s", DATA / "pytorch_dps.json", *FAST)
    assert result.returncode == 1
    lines = error_lines(result)
    assert len(lines) == 1 and "unknown hardware 'no-such-spec'" in lines[0], result.stderr
