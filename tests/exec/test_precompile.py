"""Compiles ahead, for real on the CPU: a reference compiled by inductor in a compile process fills
the shared compile cache, and a fresh process that compiles the same reference then loads its graph
from there (inductor's own counter of cache hits says so); timed sections hold the compile processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from exec_testkit import process_state

from solbench.bench.exclusive import timed_section
from solbench.bench.workers import compile_cache_environment
from solbench.data.definition import Definition
from solbench.data.problem import Problem
from solbench.data.workload import Workload
from solbench.exec.precompile import Precompiler, compile_threads, default_processes

REFERENCE = "import torch\n\n\n@torch.no_grad()\ndef run(x):\n    return torch.nn.functional.silu(x) * 2.0 + 1.0\n"


LIGHT = "import torch\n\n\ndef run(x):\n    return x.view(-1)\n"  # a graph without a kernel: nothing for inductor to build in C++


def soon(condition, seconds: float = 120) -> bool:
    """Whether `condition()` became true within `seconds` (asked every few milliseconds)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def the_one(processes) -> int:
    """The process id in `processes` (a Precompiler's running or in_flight), once there is one (2 minutes at most)."""
    soon(lambda: processes)
    (pid,) = list(processes)
    return pid


def tiny_problem(name: str = "ahead_silu", reference: str = REFERENCE) -> Problem:
    definition = Definition.model_validate({
        "name": name, "axes": {"N": {"type": "var"}}, "inputs": {"x": {"shape": ["N"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["N"], "dtype": "float32"}}, "reference": reference})
    return Problem(definition, [Workload.model_validate({"uuid": "n256", "axes": {"N": 256}, "inputs": {"x": {"type": "random"}}})])


CACHE_HITS = """
import json, sys
from solbench.exec.precompile import compile_ahead
import torch
seconds, error = compile_ahead(json.loads(sys.argv[1]))
print(json.dumps({"error": error, "hits": torch._dynamo.utils.counters["inductor"]["fxgraph_cache_hit"]}))
"""


CANDIDATE_HITS = """
import json, sys
from pathlib import Path
import torch
from solbench.bench.builders import build
from solbench.bench.verify import compiled_reference
from solbench.data.definition import Definition
from solbench.data.inputs import generate_inputs
from solbench.data.problem import Problem
from solbench.data.workload import Workload
payload = json.loads(sys.argv[1])
problem = Problem(Definition.model_validate(payload["definition"]), [Workload.model_validate(w) for w in payload["workloads"]])
run = build(compiled_reference(problem, "default"), cache_root=Path(sys.argv[2]), device="cpu").function
run(*generate_inputs(problem, problem.workloads[0], seed=0, trial=0, device="cpu", profile="auto").values())
print(json.dumps({"hits": torch._dynamo.utils.counters["inductor"]["fxgraph_cache_hit"]}))
"""


def test_a_compile_ahead_fills_the_cache_that_the_next_compile_and_the_candidates_worker_load(tmp_path: Path):
    cache = tmp_path / "compile-cache"
    problem = tiny_problem()
    ahead = Precompiler(cache, "cpu", 1)
    ahead.submit(problem, problem.workloads, "default")
    ahead.futures[0][1].result(timeout=600)
    outcome = ahead.close()
    assert outcome.compiled == 1 and outcome.failed == [] and outcome.seconds > 0
    assert any((cache / "inductor").rglob("*")), "inductor wrote nothing into the shared cache"

    payload = {"definition": problem.definition.to_json_dict(), "workloads": [w.to_json_dict() for w in problem.workloads], "root": None,
               "kind": "problem", "profile": None, "synthesize": False, "mode": "default", "device": "cpu", "seed": 0, "input_profile": "auto"}
    again = subprocess.run([sys.executable, "-c", CACHE_HITS, json.dumps(payload)], capture_output=True, text=True, timeout=600,
                           env={**__import__("os").environ, **compile_cache_environment(cache)})
    assert again.returncode == 0, again.stderr
    found = json.loads(again.stdout.strip().splitlines()[-1])
    assert found["error"] is None and found["hits"] >= 1  # loaded from the cache, not compiled again
    # the compile process compiles the candidate's own module (the entry function and settings that
    # solbench.bench.compile_limits adds), so the candidate's worker finds those graphs in the cache too
    built = subprocess.run([sys.executable, "-c", CANDIDATE_HITS, json.dumps(payload), str(tmp_path / "builds")], capture_output=True, text=True,
                           timeout=600, env={**__import__("os").environ, **compile_cache_environment(cache)})
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout.strip().splitlines()[-1])["hits"] >= 1  # loaded, not compiled again


def test_one_compile_process_serves_the_next_compiles_and_a_dead_one_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A pool thread keeps its compile process: the second problem is compiled by the same process
    (what the references print never reaches the results); a process killed between compiles is
    replaced by a fresh one, and after COMPILES_PER_PROCESS compiles a process is retired."""
    import os
    import signal

    import solbench.exec.precompile as precompile

    ahead = Precompiler(tmp_path / "cache", "cpu", 1)
    try:
        first, second = tiny_problem("ahead_a", LIGHT), tiny_problem("ahead_b", "print('noise from the reference')\n" + LIGHT)
        ahead.submit(first, first.workloads, "default")
        assert ahead.futures[-1][1].result(timeout=600)[1] is None
        (pid,) = list(ahead.running)
        ahead.submit(second, second.workloads, "default")
        assert ahead.futures[-1][1].result(timeout=600)[1] is None
        assert list(ahead.running) == [pid]  # the same process, still there for the next compile
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        third = tiny_problem("ahead_c", LIGHT)
        ahead.submit(third, third.workloads, "default")
        assert ahead.futures[-1][1].result(timeout=600)[1] is None
        (replaced,) = list(ahead.running)
        assert replaced != pid
        monkeypatch.setattr(precompile, "COMPILES_PER_PROCESS", 1)
        fourth = tiny_problem("ahead_d", LIGHT)
        ahead.submit(fourth, fourth.workloads, "default")
        assert ahead.futures[-1][1].result(timeout=600)[1] is None
        assert list(ahead.running) != [replaced]  # retired after its one compile
    finally:
        outcome = ahead.close()
    assert outcome.compiled == 4 and outcome.failed == []
    assert ahead.running == {}


def test_what_a_reference_writes_to_the_compile_process_stdout_is_passed_over(tmp_path: Path):
    """A reference that writes lines to file descriptor 1 itself (JSON among them) neither fails its
    compile nor shifts the next compile's result in the same process."""
    ahead = Precompiler(tmp_path / "cache", "cpu", 1)
    try:
        noisy = tiny_problem("ahead_noisy", "import os\nos.write(1, b'[1, 2]\\n{\"x\": 3}\\nnot json\\n')\n" + LIGHT)
        quiet = tiny_problem("ahead_quiet", LIGHT)
        first = ahead.submit(noisy, noisy.workloads, "default")
        assert first.result(timeout=600)[1] is None
        (pid,) = list(ahead.running)
        second = ahead.submit(quiet, quiet.workloads, "default")
        assert second.result(timeout=600)[1] is None and list(ahead.running) == [pid]
    finally:
        outcome = ahead.close()
    assert outcome.compiled == 2 and outcome.failed == []


SPAWNER = """import os, subprocess, sys
_ticker = subprocess.Popen([sys.executable, "-c", "import sys, time\\nwhile True:\\n    open(sys.argv[1], 'a').write('x')\\n    time.sleep(0.02)",
                            os.environ["SOLBENCH_TEST_TICKS"]])  # a child of the compile process, as inductor's compile workers are
""" + LIGHT


def state_soon(pid: int, wanted: str) -> str:
    """The process's state once it is `wanted`, or whatever it is after 5 s (a signal takes effect when the process is next scheduled)."""
    soon(lambda: process_state(pid) == wanted, 5)
    return process_state(pid)


def ticks(path: Path) -> int:
    return len(path.read_text()) if path.exists() else 0


@pytest.mark.parametrize("scope", ["process", "group"])
def test_a_timed_section_holds_the_compile_process_and_its_children_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str):
    """While a timed section runs, a ready compile process holds (it says so in its held file, with the
    pause's number) without being stopped, launches nothing (a compile queued meanwhile waits for the
    section's end), and its children (inductor's compile workers) go on. With the scope "group" (the
    behaviour before 2026-12-08, and the default on a CPU) the whole process group is stopped instead."""
    monkeypatch.setenv("SOLBENCH_TEST_TICKS", str(tmp_path / "ticks"))
    ahead = Precompiler(tmp_path / "cache", "cpu", 1, pause_scope=scope)
    try:
        spawner, light = tiny_problem("ahead_spawner", SPAWNER), tiny_problem("ahead_light", LIGHT)
        assert ahead.submit(spawner, spawner.workloads, "default").result(timeout=600)[1] is None
        pid = the_one(ahead.running)
        assert os.getpriority(os.PRIO_PROCESS, pid) >= 10  # below the evaluation's CPU priority
        with timed_section():
            queued = ahead.submit(light, light.workloads, "default")
            time.sleep(0.3)
            before = ticks(tmp_path / "ticks")
            time.sleep(1.0)
            during = ticks(tmp_path / "ticks") - before
            assert not queued.done()  # launches nothing while timing
            if scope == "process":
                assert process_state(pid) != "T" and (ahead.control / f"held-{pid}").read_text() == str(ahead.outcome.pauses)
                assert during >= 10  # the child went on (a tick each 20 ms)
            else:
                assert state_soon(pid, "T") == "T" and during <= 1
        assert queued.result(timeout=600)[1] is None
        assert state_soon(pid, "S") != "T" and ticks(tmp_path / "ticks") > before + during
    finally:
        outcome = ahead.close()
    assert outcome.pauses == 1 and outcome.stopped == (1 if scope == "group" else 0) and not ahead.control.exists()


def test_a_compile_process_that_is_starting_or_late_to_hold_is_stopped_and_continued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A process still starting when a timed section begins (it cannot take the hold signal yet) is
    stopped with SIGSTOP; so is one inside one long C call (a reference importing with sum(range(...)))
    once HOLD_TIMEOUT_S has passed. Both are continued when the section ends, and their compiles finish."""
    from solbench.exec.precompile import HOLD_TIMEOUT_S

    ahead = Precompiler(tmp_path / "cache", "cpu", 1, pause_scope="process")
    try:
        light = tiny_problem("ahead_light", LIGHT)
        first = ahead.submit(light, light.workloads, "default")
        pid = the_one(ahead.running)
        with timed_section():
            assert state_soon(pid, "T") == "T" and ahead.outcome.stopped == 1  # starting: stopped at once
        assert first.result(timeout=600)[1] is None
        mark = tmp_path / "summing"
        busy = tiny_problem("ahead_busy", f"open({str(mark)!r}, 'w').close()\nsum(range(400_000_000))\n" + LIGHT)
        second = ahead.submit(busy, busy.workloads, "default")
        assert soon(mark.exists)
        started = time.monotonic()
        with timed_section():
            waited = time.monotonic() - started
            assert state_soon(pid, "T") == "T" and ahead.outcome.stopped == 2 and waited >= HOLD_TIMEOUT_S
        assert state_soon(pid, "S") != "T"
        assert second.result(timeout=600)[1] is None
    finally:
        outcome = ahead.close()
    assert outcome.pauses == 2 and outcome.compiled == 2


ORPHANED = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_precompile import LIGHT, tiny_problem
from solbench.exec.precompile import Precompiler
ahead = Precompiler(Path(sys.argv[1]), "cpu", 1, pause_scope="process")
light = tiny_problem("ahead_light", LIGHT)
assert ahead.submit(light, light.workloads, "default").result(timeout=600)[1] is None
ahead._pause(True)
print(next(iter(ahead.running)), flush=True)
time.sleep(600)
"""


def test_a_held_compile_process_whose_run_died_goes_on_and_ends(tmp_path: Path):
    """The run's process killed while its compile processes are held (its pause file left behind): a
    held process notices that its parent is gone, stops holding, reads the end of its input and exits."""
    run = subprocess.Popen([sys.executable, "-c", ORPHANED, str(tmp_path / "cache"), str(Path(__file__).parent)], stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout is not None
        pid = int(run.stdout.readline())
        time.sleep(0.3)
        assert process_state(pid) != "T"  # held, not stopped
        run.kill()
        run.wait()
        assert soon(lambda: not os.path.exists(f"/proc/{pid}") or process_state(pid) == "Z", 30)
    finally:
        run.kill()


GPU_BUSY = """import torch

_x = torch.randn(4096, 4096, device="cuda")
for _ in range(200):  # about a second of device work queued at import, while the compile process takes the hold signal
    _x = _x @ _x / 64.0
""" + REFERENCE


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_a_compile_process_drains_its_device_work_before_it_says_it_holds(tmp_path: Path):
    """On a GPU the default is to hold: a compile process with device work queued says it holds only
    once that work is done (torch.cuda.synchronize in the hold), is not stopped, and compiles on after."""
    ahead = Precompiler(tmp_path / "cache", "cuda", 1)
    try:
        silu = tiny_problem()
        assert ahead.submit(silu, silu.workloads, "default").result(timeout=600)[1] is None
        pid = the_one(ahead.running)
        mark = tmp_path / "queued"
        busy = tiny_problem("ahead_gpu_busy", GPU_BUSY.replace("for _ in range(200):", f"open({str(mark)!r}, 'w').close()\nfor _ in range(200):"))
        future = ahead.submit(busy, busy.workloads, "default")
        assert soon(mark.exists)
        time.sleep(0.2)  # the 200 matmuls queued (launching them takes far less than running them)
        with timed_section():
            assert process_state(pid) != "T" and (ahead.control / f"held-{pid}").read_text() == str(ahead.outcome.pauses)
        assert ahead.outcome.stopped == 0 and ahead.outcome.pause_wait_s > 0.05  # the section waited for the matmuls to drain
        assert future.result(timeout=600)[1] is None
    finally:
        ahead.close()


def test_compile_processes_are_held_on_a_gpu_and_stopped_whole_on_a_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """On a CPU the compile workers' cores are the timed device: their process groups are stopped. On a
    GPU the processes are held, unless SOLBENCH_COMPILE_PAUSE=group (anything else is the default)."""
    from solbench.exec.precompile import PAUSE_SCOPE_ENV

    def whole_groups(device: str) -> bool:
        ahead = Precompiler(tmp_path / "cache", device, 0)  # no process: nothing reaches the device
        ahead.close()
        return ahead.whole_groups

    monkeypatch.delenv(PAUSE_SCOPE_ENV, raising=False)
    assert whole_groups("cpu") and not whole_groups("cuda:0")
    monkeypatch.setenv(PAUSE_SCOPE_ENV, "group")
    assert whole_groups("cuda:0")
    monkeypatch.setenv(PAUSE_SCOPE_ENV, "processes")
    assert not whole_groups("cuda:0") and whole_groups("cpu")


def test_compiling_ahead_is_off_on_a_cpu_and_half_the_cores_on_a_gpu():
    import os

    assert default_processes("cpu") == 0
    assert default_processes("cuda:0") == max(1, min(8, len(os.sched_getaffinity(0)) // 2))  # the cores this process may use


def test_the_compile_processes_share_the_cores_for_inductors_compile_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Each compile process gets cores / processes compile workers (at least 1), unless the user set
    TORCHINDUCTOR_COMPILE_THREADS; the variable reaches the compile process."""
    import os

    cores = len(os.sched_getaffinity(0))
    assert [compile_threads(n) for n in (1, 2, cores, 4 * cores)] == [cores, max(1, cores // 2), 1, 1]
    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    ahead = Precompiler(tmp_path / "cache", "cpu", 2)
    ahead.close()
    assert ahead.environment["TORCHINDUCTOR_COMPILE_THREADS"] == str(compile_threads(2))
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "3")
    ahead = Precompiler(tmp_path / "cache", "cpu", 1)
    try:
        problem = tiny_problem("ahead_threads", "import os\nprint(os.environ['TORCHINDUCTOR_COMPILE_THREADS'])\n" + LIGHT)
        assert ahead.submit(problem, problem.workloads, "default").result(timeout=600)[1] is None
    finally:
        ahead.close()
    assert ahead.environment["TORCHINDUCTOR_COMPILE_THREADS"] == "3"


def test_the_queue_is_taken_from_both_ends_and_each_compile_is_logged(tmp_path: Path):
    """With two processes and four compiles queued, the first two started are the first and the last
    queued (the quickest-looking and the costliest); every finished compile is a line of the log."""
    log = tmp_path / "run" / "compile-ahead.jsonl"
    ahead = Precompiler(tmp_path / "cache", "cpu", 2, log=log)
    try:
        problems = [tiny_problem(f"ahead_{letter}", LIGHT) for letter in "abcd"]
        with ahead.lock:  # all four queued before either thread takes one
            futures = [ahead.submit(problem, problem.workloads, "default") for problem in problems]
        soon(lambda: sum(not f.running() and not f.done() for f in futures) <= 2)
        started = [problem.name for problem, future in zip(problems, futures) if future.running() or future.done()]
        assert started == ["ahead_a", "ahead_d"]
        assert all(future.result(timeout=600)[1] is None for future in futures)
    finally:
        outcome = ahead.close()
    assert outcome.compiled == 4
    *rows, pauses = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(row["problem"] for row in rows) == ["ahead_a", "ahead_b", "ahead_c", "ahead_d"]
    assert pauses["pauses"] == 0 and pauses["scope"] == "group" and pauses["ended_s"] >= max(row["ended_s"] for row in rows)  # the last line
    assert all(row["mode"] == "default" and row["error"] is None and row["seconds"] > 0 and row["ended_s"] > 0 for row in rows)


def test_a_compile_killed_when_the_run_ends_is_no_failure(tmp_path: Path):
    """close() kills a compile in flight and drops what was queued: neither is counted as compiled or failed."""
    ahead = Precompiler(tmp_path / "cache", "cpu", 1)
    slow = tiny_problem("ahead_slow", "import time\ntime.sleep(60)\n" + LIGHT)
    running = ahead.submit(slow, slow.workloads, "default")
    queued = ahead.submit(slow, slow.workloads, "default")
    pid = the_one(ahead.running)
    assert os.getpgid(pid) == pid  # a process group of its own: its compile workers are signalled with it
    started = time.monotonic()
    outcome = ahead.close()
    assert time.monotonic() - started < 30
    assert outcome.compiled == 0 and outcome.failed == []
    assert running.result(timeout=1)[1] == "not finished: the run ended" and queued.cancelled()


def test_a_workload_evaluated_again_for_memory_ends_the_compiles_in_flight_and_they_run_again_after(tmp_path: Path):
    """device_alone (a workload evaluated again after running out of memory) hands the device's memory
    back: the compile in flight is ended (its process gone), none starts while it lasts, and the compile
    runs again after it, to its result: neither lost nor counted as failed."""
    from solbench.bench.exclusive import device_alone

    ahead = Precompiler(tmp_path / "cache", "cpu", 1)
    slowish = tiny_problem("ahead_slowish", "import time\ntime.sleep(4)\n" + LIGHT)
    future = ahead.submit(slowish, slowish.workloads, "default")
    pid = the_one(ahead.in_flight)
    try:
        with device_alone():
            time.sleep(0.3)
            assert not os.path.exists(f"/proc/{pid}")  # ended and reaped: its device memory is back
            assert not ahead.running and not future.done()  # and nothing started in its place
        seconds, error = future.result(timeout=300)
        assert error is None and seconds > 4  # compiled again, whole, in a new process
    finally:
        outcome = ahead.close()
    assert outcome.compiled == 1 and outcome.failed == []


OUT_OF_MEMORY_AT_FIRST = """import os
from pathlib import Path

_tries = Path(os.environ["SOLBENCH_TEST_TRIES"])
_tries.write_text(_tries.read_text() + "x" if _tries.exists() else "x")
if len(_tries.read_text()) <= int(os.environ["SOLBENCH_TEST_OUT_OF_MEMORY"]):
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.18 GiB of which 88.19 MiB is free.")
""" + LIGHT


@pytest.mark.parametrize("failures", [1, 5])
def test_a_compile_that_runs_out_of_device_memory_is_tried_again_in_a_fresh_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                      failures: int):
    """Out of memory beside the other compiles and the evaluation: queued again (a fresh process each time)
    up to OUT_OF_MEMORY_TRIES in all; a compile that runs out every time fails with the allocator's message."""
    from solbench.exec.precompile import OUT_OF_MEMORY_TRIES

    tries = tmp_path / "tries"
    monkeypatch.setenv("SOLBENCH_TEST_TRIES", str(tries))
    monkeypatch.setenv("SOLBENCH_TEST_OUT_OF_MEMORY", str(failures))
    ahead = Precompiler(tmp_path / "cache", "cpu", 1, log=tmp_path / "compile-ahead.jsonl")
    problem = tiny_problem("ahead_out_of_memory", OUT_OF_MEMORY_AT_FIRST)
    seconds, error = ahead.submit(problem, problem.workloads, "default").result(timeout=300)
    outcome = ahead.close()
    rows = [row for row in map(json.loads, (tmp_path / "compile-ahead.jsonl").read_text().splitlines()) if "problem" in row]
    if failures < OUT_OF_MEMORY_TRIES:
        assert error is None and outcome.compiled == 1 and outcome.failed == [] and len(tries.read_text()) == failures + 1
        assert [row["error"] for row in rows] == [None]  # the tries that ran out are not results
    else:
        assert "out of memory" in error and outcome.compiled == 0 and len(outcome.failed) == 1
        assert len(tries.read_text()) == OUT_OF_MEMORY_TRIES and len(rows) == 1
