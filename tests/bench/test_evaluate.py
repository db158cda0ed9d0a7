"""End-to-end evaluation: real solution files (tests/fixtures/solutions/status/*.json, sources inline) evaluated
by evaluate() with real worker subprocesses and real builds (no mocks); each test asserts the exact trace
status of every workload and the key facts of the trace.

The problem is tests/fixtures/solutions/status/vector_scale (y = x * alpha, float32, three workloads:
N = 16, 64, 1000); broken_reference is a problem whose reference raises. Options are kept small for
speed; the one C++ build that succeeds goes into a build cache shared by the whole test session.
Solutions that need to tell the test which process ran them append "pid N" lines to the file named by
$SOLBENCH_TEST_CALLS (workers inherit the test process's environment).

Most tests evaluate in a kept WorkerPair (the `kept` fixture), as `solbench run` keeps one per lane
(solbench.exec.jobs.kept_workers): its trusted reference worker is started once per test process and
loaded with each evaluation's problem in turn, while every solution (untrusted code) still gets a fresh
solution worker of its own, killed when its evaluation ends. Tests whose meaning involves the workers
themselves (crashes, timeouts that kill workers, worker pids, leftover processes, elapsed times that a
reference start would be part of, the environment the workers start with) evaluate in a pair of their own.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from solbench.bench.orchestrator import EvalOptions, evaluate, resolve_device
from solbench.bench.workers import WorkerPair
from solbench.data import Solution, load_solution
from solbench.data.loaders import load_problems
from solbench.data.problem import Problem
from solbench.data.trace import Status, Trace

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "solutions" / "status"
SEED = 20240
# These tests exercise the run-time path, so static analysis (which would refuse several of these
# deliberately misbehaving solutions up front) is off here; test_static_analysis_refuses_before_running covers it.
SMALL = dict(device="cpu", trials=2, min_iterations=3, budget_s=0.5, warmup=1, timeout_s=60.0, seed=SEED, static_analysis=False, hidden=0)
RUN_LIMIT_S = 150.0  # no evaluate() in this file may take longer: a hang fails the test instead of the session


# --- helpers ----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for the session: identical (C++) solutions are built once."""
    return tmp_path_factory.mktemp("solbench-builds")


@pytest.fixture(autouse=True)
def _no_stray_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOLBENCH_TEST_CALLS", raising=False)


class KeptPairs:
    """Worker pairs kept across this module's evaluations, one per set of what a pair is made of: the
    device and the options WorkerPair.for_options takes (sandbox, build cache, compile timeout, log limit,
    compile cache; the other options are per evaluation), and the environment its reference worker starts
    with (workers inherit this process's: a test that sets a variable gets a pair of its own)."""

    def __init__(self) -> None:
        self.pairs: dict[tuple[Any, ...], WorkerPair] = {}

    @staticmethod
    def key(device: str, options: EvalOptions) -> tuple[Any, ...]:
        return (device, options.sandbox, Path(options.cache_root).absolute(), options.compile_timeout_s, options.log_limit,
                options.compile_cache, _worker_environment())

    @contextlib.contextmanager
    def use(self, options: EvalOptions) -> Iterator[WorkerPair]:
        """The pair for `options`, opened on first use. Where the evaluation raised (or hung: bounded()
        failed the test), the pair's state is not to be relied on: it is closed, the next test opens another."""
        device = resolve_device(options.device)
        key = self.key(device, options)
        pair = self.pairs.get(key)
        if pair is None:
            pair = self.pairs[key] = WorkerPair.for_options(device, options)
        try:
            yield pair
        except BaseException:
            if self.pairs.get(key) is pair:
                del self.pairs[key]
            pair.kill_processes()  # an evaluation still running in bounded()'s thread finds its workers gone
            pair.__exit__()  # its workers stopped, its blob session removed
            raise

    def close(self) -> None:
        pairs, self.pairs = list(self.pairs.values()), {}
        for pair in pairs:
            pair.__exit__()  # its workers stopped, its blob session removed


def _worker_environment() -> tuple[tuple[str, str], ...]:
    """The environment a worker started now inherits, less what cannot change a worker: pytest's name of the
    current test, and TORCHINDUCTOR_CACHE_DIR where it is torch's default (inductor sets it so in this process
    on first use; a worker without it uses that same folder)."""
    ignored = {"PYTEST_CURRENT_TEST"}
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        if os.environ.get("TORCHINDUCTOR_CACHE_DIR") == os.path.abspath(default_cache_dir()):
            ignored.add("TORCHINDUCTOR_CACHE_DIR")
    except Exception:  # noqa: BLE001 - a torch without it: the variable counts like any other
        pass
    return tuple(sorted((name, value) for name, value in os.environ.items() if name not in ignored))


@pytest.fixture(scope="module")
def kept() -> Iterator[KeptPairs]:
    """The kept worker pairs of this module's tests in this test process. Module-scoped: pytest tears it down
    (its reference workers stop) after this module's last test here and whenever the next test this process
    runs is another module's (pytest-xdist --dist worksteal interleaves modules in a process): tests that count
    worker processes (tests/exec/test_slots.py, say) never find ours. More tests of this module open it again."""
    pairs = KeptPairs()
    try:
        yield pairs
    finally:
        pairs.close()


def evaluate_in(kept: KeptPairs | None, problem: Problem, solution: Solution, options: EvalOptions, limit_s: float | None = RUN_LIMIT_S,
                **arguments: Any) -> list[Trace]:
    """evaluate() in the kept pair for `options` (None: in a pair of its own, as evaluate() opens without `workers`),
    bounded by limit_s (None: unbounded)."""
    with kept.use(options) if kept is not None else contextlib.nullcontext(None) as pair:
        if limit_s is None:
            return evaluate(problem, solution, options, workers=pair, **arguments)
        return bounded(lambda: evaluate(problem, solution, options, workers=pair, **arguments), limit_s)


def load(name: str) -> tuple[Problem, Solution]:
    solution = load_solution(DATA / f"{name}.json")
    problems = load_problems([DATA / solution.definition])
    assert [p.name for p in problems] == [solution.definition]
    return problems[0], solution


class Run:
    """The outcome of one evaluate() call: traces, those reported through on_trace (with the time each
    arrived), and the wall time."""

    def __init__(self, traces: list[Trace], reported: list[tuple[float, Trace]], elapsed: float):
        self.traces, self.reported, self.elapsed = traces, reported, elapsed

    @property
    def statuses(self) -> list[Status]:
        return [t.evaluation.status for t in self.traces]

    def by_uuid(self, uuid: str) -> Trace:
        (trace,) = [t for t in self.traces if t.workload.uuid == uuid]
        return trace


def bounded(function: Callable[[], Any], limit_s: float) -> Any:
    """Run function in a thread; fail (instead of hanging the session) when it takes longer than limit_s."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="bounded-evaluate")
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        pytest.fail(f"evaluate() did not return within {limit_s:.0f} s (a hang)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def run_solution(name: str, cache_root: Path, workloads: list[str] | None = None, limit_s: float = RUN_LIMIT_S, kept: KeptPairs | None = None,
                 **options: Any) -> Run:
    """`kept`: evaluate in the kept pair for these options (None: in a pair of its own)."""
    problem, solution = load(name)
    chosen = [problem.workload(uuid) for uuid in workloads] if workloads else None
    eval_options = EvalOptions(**{**SMALL, "cache_root": cache_root, **options})
    reported: list[tuple[float, Trace]] = []
    started = time.monotonic()
    traces = evaluate_in(kept, problem, solution, eval_options, limit_s, workloads=chosen,
                         on_trace=lambda trace: reported.append((time.monotonic(), trace)))
    elapsed = time.monotonic() - started
    expected = workloads or [w.uuid for w in problem.workloads]  # vector_scale: vs-n0016, vs-n0064, vs-n1000
    # Every trace is about this problem and solution, in workload order, and was reported as it came.
    assert [t.workload.uuid for t in traces] == expected
    assert all(t.definition == problem.name and t.solution == solution.name for t in traces)
    assert [trace for _, trace in reported] == traces
    for trace in traces:
        evaluation = trace.evaluation
        assert evaluation is not None and evaluation.timestamp
        assert evaluation.environment["device"] == "cpu" and evaluation.environment["seed"] == eval_options.seed
        assert evaluation.environment["torch"]
        Trace.model_validate(trace.to_json_dict())  # writes and reads back as a Trace line
    return Run(traces, reported, elapsed)


def assert_passed(trace: Trace, options: dict[str, Any] = SMALL) -> None:
    evaluation = trace.evaluation
    assert evaluation.status == Status.PASSED, evaluation.log
    correctness = evaluation.correctness
    assert correctness is not None
    tolerance = trace.workload.effective_tolerance
    assert 0.0 <= correctness.max_absolute_error <= tolerance.max_atol
    assert 0.0 <= correctness.max_relative_error < math.inf
    assert correctness.matched_ratio == 1.0
    assert correctness.first_mismatch_index is None
    assert correctness.trials == options["trials"]
    performance = evaluation.performance
    assert performance is not None
    assert performance.latency_ms is not None and 0.0 < performance.latency_ms < 10_000
    assert performance.latency_iqr_ms is not None and performance.latency_iqr_ms >= 0.0
    assert performance.timing_method == "perf_counter"
    assert performance.iterations is not None and options["min_iterations"] <= performance.iterations
    assert performance.sol_ms is None  # a CPU: no datasheet bound


def assert_failed(trace: Trace, status: Status, *patterns: str) -> None:
    evaluation = trace.evaluation
    assert evaluation.status == status, f"{evaluation.status}: {evaluation.log}"
    assert evaluation.performance is None  # only a solution that passes is timed
    for pattern in patterns:
        assert re.search(pattern, evaluation.log), f"{pattern!r} not in the log:\n{evaluation.log}"


def calls(path: Path) -> list[tuple[int, int]]:
    """(pid, N) of every call a solution recorded."""
    if not path.exists():
        return []
    return [(int(pid), int(n)) for pid, n in (line.split() for line in path.read_text().splitlines() if line.strip())]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_until_gone(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pids = {pid for pid in pids if alive(pid)}
        if not pids:
            break
        time.sleep(0.1)
    return {pid for pid in pids if alive(pid)}


def processes_mentioning(text: str) -> dict[int, str]:
    """Live processes (not this one) whose command line contains text."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command and alive(int(entry.name)):
            found[int(entry.name)] = command[:200]
    return found


# --- PASSED -----------------------------------------------------------------------------------------


def test_pytorch_destination_passing_style_passes(cache_root: Path, kept: KeptPairs):
    run = run_solution("pytorch_dps", cache_root, kept=kept)
    assert run.statuses == [Status.PASSED] * 3
    for trace in run.traces:
        assert_passed(trace)
        assert trace.evaluation.correctness.max_absolute_error == 0.0  # the same float32 multiply as the reference


def test_value_returning_pytorch_passes(cache_root: Path, kept: KeptPairs):
    problem, solution = load("pytorch_returning")
    assert solution.spec.destination_passing_style is False
    run = run_solution("pytorch_returning", cache_root, kept=kept)
    assert run.statuses == [Status.PASSED] * 3
    for trace in run.traces:
        assert_passed(trace)


def test_triton_kernel_passes_under_the_interpreter(cache_root: Path, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("triton")
    # Workers are started with this process's environment, so TRITON_INTERPRET=1 set here reaches them:
    # there is no GPU, so without the interpreter the kernel cannot run at all (see the next test).
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    problem, solution = load("triton_scale")
    assert "@triton.jit" in solution.source("kernel.py")
    run = run_solution("triton_scale", cache_root)
    assert run.statuses == [Status.PASSED] * 3
    for trace in run.traces:
        assert_passed(trace)


def test_triton_kernel_with_the_interpreter_turned_off_is_a_runtime_error(cache_root: Path, monkeypatch: pytest.MonkeyPatch):
    """The control of the test above: the interpreter is what makes the kernel run in CPU workers (they get
    TRITON_INTERPRET=1 by themselves unless the variable says otherwise)."""
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    run = run_solution("triton_scale", cache_root, workloads=["vs-n0016"], trials=1)
    assert_failed(run.traces[0], Status.RUNTIME_ERROR, r"active drivers")


def test_cpp_solution_built_with_cpp_extension_passes(cache_root: Path):
    problem, solution = load("cpp_scale")
    assert solution.spec.family == "cpp" and solution.spec.entry_file.endswith(".cpp")
    run = run_solution("cpp_scale", cache_root, limit_s=400)
    assert run.statuses == [Status.PASSED] * 3
    for trace in run.traces:
        assert_passed(trace)
    # The build is in the session's cache, finished (marked), so an identical solution is not rebuilt.
    built = [path.parent for path in cache_root.glob("*/build/.solbench_build.json") if (path.parent / "scale.cpp").is_file()]
    assert len(built) == 1 and list(built[0].glob("*.so"))
    again = run_solution("cpp_scale", cache_root, workloads=["vs-n0016"], trials=1, timing=False)
    assert again.statuses == [Status.PASSED]
    assert again.elapsed < run.elapsed


# --- wrong outputs ----------------------------------------------------------------------------------


def test_wrong_shape_is_incorrect_shape(cache_root: Path, kept: KeptPairs):
    run = run_solution("wrong_shape", cache_root, kept=kept)
    assert run.statuses == [Status.INCORRECT_SHAPE] * 3
    for trace, n in zip(run.traces, (16, 64, 1000)):
        assert_failed(trace, Status.INCORRECT_SHAPE, re.escape(f"output 'y' has shape [{n - 1}], the reference has [{n}]"))
        correctness = trace.evaluation.correctness
        assert correctness.matched_ratio == 0.0 and correctness.max_absolute_error == math.inf


def test_wrong_number_of_returned_values_is_incorrect_shape(cache_root: Path, kept: KeptPairs):
    run = run_solution("wrong_output_count", cache_root, kept=kept)
    assert run.statuses == [Status.INCORRECT_SHAPE] * 3
    for trace in run.traces:
        assert_failed(trace, Status.INCORRECT_SHAPE, re.escape("returned 2 value(s); the definition declares 1 output(s) (y)"))


def test_float64_output_for_a_float32_output_is_incorrect_dtype(cache_root: Path, kept: KeptPairs):
    run = run_solution("wrong_dtype", cache_root, kept=kept)
    assert run.statuses == [Status.INCORRECT_DTYPE] * 3
    for trace in run.traces:
        assert_failed(trace, Status.INCORRECT_DTYPE, r"output 'y' has dtype float64, declared float32")


def test_off_by_a_constant_is_incorrect_numerical(cache_root: Path, kept: KeptPairs):
    run = run_solution("off_by_constant", cache_root, kept=kept)
    assert run.statuses == [Status.INCORRECT_NUMERICAL] * 3
    for trace, n in zip(run.traces, (16, 64, 1000)):
        assert_failed(trace, Status.INCORRECT_NUMERICAL, rf"^trial 1/2: output 'y': {n} of {n} elements \(100.0%\) outside atol 1e-05")
        correctness = trace.evaluation.correctness
        assert correctness.max_absolute_error == pytest.approx(1.0, abs=1e-5)
        assert correctness.matched_ratio == 0.0
        assert correctness.first_mismatch_index == [0]
        assert correctness.trials == 2


def test_a_failed_trace_starts_with_its_reason_before_the_notes_of_the_trials_that_passed(cache_root: Path, kept: KeptPairs):
    """Trial 1 passes (and notes its outputs' precision), a later trial fails: the log's first line is
    the failure, which the baselines and the run summary show as a failed candidate's detail."""
    run = run_solution("wrong_after_first_trial", cache_root, kept=kept, workloads=["vs-n0064"], trials=3)
    (trace,) = run.traces
    assert trace.evaluation.status == Status.INCORRECT_NUMERICAL
    lines = trace.evaluation.log.splitlines()
    assert re.match(r"trial [23]/3: output 'y': 64 of 64 elements", lines[0]), lines
    assert any(line.startswith("precision: outputs consistent with their declared float32") for line in lines[1:]), lines


def test_all_zero_output_is_incorrect_numerical(cache_root: Path, kept: KeptPairs):
    run = run_solution("all_zero", cache_root, kept=kept)
    assert run.statuses == [Status.INCORRECT_NUMERICAL] * 3
    for trace in run.traces:
        assert_failed(trace, Status.INCORRECT_NUMERICAL, r"output 'y' is all zeros, the reference is not")
        assert trace.evaluation.correctness.matched_ratio == 0.0


def test_output_left_unwritten_is_incorrect_numerical(cache_root: Path, kept: KeptPairs):
    """Preallocated outputs are poisoned (NaN for floats) before the call: writing nothing never passes."""
    run = run_solution("writes_nothing", cache_root, kept=kept)
    assert run.statuses == [Status.INCORRECT_NUMERICAL] * 3
    for trace, n in zip(run.traces, (16, 64, 1000)):
        assert_failed(trace, Status.INCORRECT_NUMERICAL, rf"{n} of {n} elements \(100.0%\) outside", r"got nan")
        correctness = trace.evaluation.correctness
        assert correctness.max_absolute_error == math.inf and correctness.matched_ratio == 0.0


# --- errors -----------------------------------------------------------------------------------------


def test_python_exception_is_a_runtime_error_with_its_text(cache_root: Path, kept: KeptPairs):
    run = run_solution("raises", cache_root, kept=kept)
    assert run.statuses == [Status.RUNTIME_ERROR] * 3
    for trace, n in zip(run.traces, (16, 64, 1000)):
        assert_failed(trace, Status.RUNTIME_ERROR, re.escape(f"RuntimeError: solution exploded on purpose (n={n})"), r"Traceback")


def test_a_runtime_error_log_starts_with_the_error_even_when_its_traceback_is_cut(cache_root: Path, kept: KeptPairs):
    """The log keeps the end of a long traceback; its first line (what a summary shows of a failed baseline
    candidate) is the error itself, not a line from the middle of the traceback."""
    run = run_solution("raises_after_a_long_cause", cache_root, kept=kept, workloads=["vs-n0016"])
    log = run.traces[0].evaluation.log
    assert run.statuses == [Status.RUNTIME_ERROR]
    assert log.splitlines()[0] == "RuntimeError: compiled kernel failed (n=16)", log[:300]
    assert "generated kernel line 399" in log and "generated kernel line 0:" not in log  # the traceback's end, cut


def test_segfault_is_a_runtime_error_and_the_next_workload_gets_a_fresh_worker(cache_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    record = tmp_path / "calls.txt"
    monkeypatch.setenv("SOLBENCH_TEST_CALLS", str(record))
    run = run_solution("segfault_first", cache_root, sandbox="none")  # it keeps a call log under /tmp and compares worker pids
    assert run.statuses == [Status.RUNTIME_ERROR, Status.PASSED, Status.PASSED]
    assert_failed(run.traces[0], Status.RUNTIME_ERROR, r"the solution worker died during run: killed by SIGSEGV")
    assert_passed(run.traces[1])
    assert_passed(run.traces[2])
    seen = calls(record)
    crashed = {pid for pid, n in seen if n == 16}
    after = {pid for pid, n in seen if n != 16}
    assert len(crashed) == 1 and len(after) == 1, seen  # one crash; then one fresh worker for the rest
    assert crashed.isdisjoint(after)
    assert [n for pid, n in seen if n == 16] == [16]  # the crash was not retried
    assert wait_until_gone(crashed | after, 10) == set()  # no worker outlives evaluate()


def test_what_a_crashing_solution_printed_is_in_its_trace(cache_root: Path):
    run = run_solution("segfault_first", cache_root, workloads=["vs-n0016"])
    assert_failed(run.traces[0], Status.RUNTIME_ERROR, r"SIGSEGV", r"about to crash")


def test_endless_loop_is_a_timeout_and_the_run_goes_on(cache_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    record = tmp_path / "calls.txt"
    monkeypatch.setenv("SOLBENCH_TEST_CALLS", str(record))
    started = time.monotonic()
    run = run_solution("endless_loop_first", cache_root, timeout_s=5.0, limit_s=90, sandbox="none")  # call log under /tmp
    assert run.statuses == [Status.TIMEOUT, Status.PASSED, Status.PASSED]
    assert_failed(run.traces[0], Status.TIMEOUT, r"run did not finish within 5 s")
    assert_passed(run.traces[1])
    assert_passed(run.traces[2])
    # The first trace was reported when the timeout struck, before the other workloads ran.
    first_reported = run.reported[0][0] - started
    assert 5.0 <= first_reported < 30.0
    assert time.monotonic() - started < 60.0
    seen = calls(record)
    looping = {pid for pid, n in seen if n == 16}
    fresh = {pid for pid, n in seen if n != 16}
    assert len(looping) == 1 and len(fresh) == 1 and looping.isdisjoint(fresh), seen
    assert wait_until_gone(looping | fresh, 10) == set()  # the looping worker was killed, not left spinning


def test_python_syntax_error_is_a_compile_error(cache_root: Path, kept: KeptPairs):
    run = run_solution("python_syntax_error", cache_root, kept=kept)
    assert run.statuses == [Status.COMPILE_ERROR] * 3
    for trace in run.traces:
        assert_failed(trace, Status.COMPILE_ERROR, r"SyntaxError: expected ':'", r'main\.py", line 1')
        assert trace.evaluation.correctness is None


def test_compile_error_log_states_the_error_once(cache_root: Path, kept: KeptPairs):
    run = run_solution("python_syntax_error", cache_root, kept=kept, workloads=["vs-n0016"])
    assert_failed(run.traces[0], Status.COMPILE_ERROR, r"SyntaxError")
    assert run.traces[0].evaluation.log.count("SyntaxError: expected ':'") == 1


def test_cpp_syntax_error_is_a_compile_error_with_the_compiler_line(cache_root: Path, kept: KeptPairs):
    run = run_solution("cpp_syntax_error", cache_root, kept=kept, limit_s=300)
    assert run.statuses == [Status.COMPILE_ERROR] * 3
    for trace in run.traces:
        assert_failed(trace, Status.COMPILE_ERROR, r"broken\.cpp:3:\d+: error: expected ',' or ';' before 'return'")


@pytest.fixture(scope="module")
def build_timeout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """cpp_slow_build (a real torch/extension.h build, tens of seconds) under compile_timeout_s=1, in a
    cache folder of its own. Records which processes of that build are still running a moment after
    evaluate() returned, then ends them (by pid: they were started by this test)."""
    cache = tmp_path_factory.mktemp("build-timeout-cache")
    run = run_solution("cpp_slow_build", cache, compile_timeout_s=1.0, limit_s=120)
    deadline = time.monotonic() + 3.0
    leftover = processes_mentioning(str(cache))
    while leftover and time.monotonic() < deadline:
        time.sleep(0.2)
        leftover = processes_mentioning(str(cache))
    for pid in leftover:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"run": run, "leftover": leftover, "cache": cache}


def test_build_past_the_compile_timeout_is_a_timeout(build_timeout: dict[str, Any]):
    run = build_timeout["run"]
    assert run.statuses == [Status.TIMEOUT] * 3
    for trace in run.traces:
        assert_failed(trace, Status.TIMEOUT, r"^build: build did not finish within 1 s")
        assert trace.evaluation.correctness is None
    assert run.elapsed < 60.0
    # the killed build was not marked finished, so it can never be reused
    assert not list(build_timeout["cache"].glob("*/build/.solbench_build.json"))


def test_build_past_the_compile_timeout_leaves_no_compiler_running(build_timeout: dict[str, Any]):
    assert build_timeout["leftover"] == {}


def test_reference_that_raises_is_invalid_reference(cache_root: Path, kept: KeptPairs):
    run = run_solution("identity_for_broken", cache_root, kept=kept)
    assert run.statuses == [Status.INVALID_REFERENCE]
    assert_failed(run.traces[0], Status.INVALID_REFERENCE, r"reference failed: ValueError: reference is broken on purpose")


# --- output of the solution --------------------------------------------------------------------------

NOISY_LOG_LIMIT = 4000


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_solution("noisy", tmp_path_factory.mktemp("noisy-cache"), log_limit=NOISY_LOG_LIMIT)


def test_printing_json_like_text_does_not_break_the_protocol(noisy_run: Run):
    problem, solution = load("noisy")
    assert '{"ok": true' in solution.source("main.py")  # lines that look like the worker's own answers
    assert noisy_run.statuses == [Status.PASSED] * 3
    for trace in noisy_run.traces:
        assert_passed(trace)
        assert len(trace.evaluation.log) <= NOISY_LOG_LIMIT + 64  # bounded


def test_what_the_solution_prints_goes_into_the_trace_log_bounded(noisy_run: Run):
    for trace in noisy_run.traces:
        log = trace.evaluation.log
        assert "NOISE-NOISE-" in log and '{"ok": true}' in log
        assert len(log) <= NOISY_LOG_LIMIT + 64


def test_a_time_below_the_speed_of_light_is_flagged_for_audit(tmp_path, cache_root, kept: KeptPairs):
    """A hardware spec far slower than this CPU puts T_SOL above any real time: never a win."""
    import yaml

    from solbench.sol.hardware import get_hardware

    slow = get_hardware("H200").model_dump(mode="json")
    slow.update(name="Snail", dram={"capacity_gb": 1, "bandwidth_tbps": 1e-9})
    path = tmp_path / "snail.yaml"
    path.write_text(yaml.safe_dump(slow))
    run = run_solution("pytorch_dps", cache_root, kept=kept, workloads=["vs-n0016"], hardware=str(path))
    evaluation = run.traces[0].evaluation
    assert evaluation.status == Status.REWARD_HACK
    assert evaluation.performance.latency_ms < evaluation.performance.sol_ms
    assert "faster-than-sol" in evaluation.log and "Snail" in evaluation.log


def test_the_latency_floor_is_the_bound_of_both_the_check_and_the_score(tmp_path, cache_root, kept: KeptPairs):
    """A spec whose latency floor (1 ms) is above any real time of a 16-element call: with the floor, the
    evaluator's faster-than-sol check and the score both use T_SOL = the floor (REWARD_HACK, score 0); with
    sol_floor off (--no-sol-floor), both use the roofline alone (PASSED, a score against that T_SOL)."""
    import yaml

    from solbench.score.aggregate import score_workload
    from solbench.score.baselines import BaselineEntry
    from solbench.score.formula import FASTER_THAN_SOL, sol_score
    from solbench.sol.hardware import get_hardware

    floored = get_hardware("H200").model_dump(mode="json")
    floored.update(name="Floored", launch_floor_s=1e-3, dram_latency_floor_s=1e-3)
    path = tmp_path / "floored.yaml"
    path.write_text(yaml.safe_dump(floored))
    entry = BaselineEntry(problem="vector_scale", workload="vs-n0016", definition_hash="-", baseline_ms=5.0)
    with_floor, roofline_only = (run_solution("pytorch_dps", cache_root, kept=kept, workloads=["vs-n0016"], hardware=str(path),
                                              sol_floor=floor).traces[0]
                                 for floor in (True, False))

    performance = with_floor.evaluation.performance
    assert with_floor.evaluation.status == Status.REWARD_HACK and "faster-than-sol" in with_floor.evaluation.log
    assert "(its latency floor; the roofline is" in with_floor.evaluation.log
    assert performance.sol_ms == performance.sol_floor_ms == 1.0 and performance.sol_floor_applied is True
    assert performance.sol_roofline_ms < 1e-5 and performance.latency_ms < performance.sol_ms
    row = score_workload(with_floor, entry)
    assert row.sol_ms == performance.sol_ms and row.sol_floor_ms == 1.0 and row.sol_roofline_ms == performance.sol_roofline_ms
    assert row.score == 0.0 and FASTER_THAN_SOL in row.flags

    performance = roofline_only.evaluation.performance
    assert roofline_only.evaluation.status == Status.PASSED, roofline_only.evaluation.log
    assert performance.sol_ms == performance.sol_roofline_ms < 1e-5 and performance.sol_floor_ms == 1.0
    assert performance.sol_floor_applied is False and performance.latency_ms > performance.sol_ms
    row = score_workload(roofline_only, entry)
    assert row.sol_ms == performance.sol_ms and FASTER_THAN_SOL not in row.flags
    assert row.score == sol_score(True, performance.latency_ms, performance.sol_ms, 5.0, performance.latency_iqr_ms).score > 0


def test_static_analysis_refuses_before_running(cache_root, kept: KeptPairs):
    """On by default: a solution using ctypes is refused as REWARD_HACK on every workload, unbuilt."""
    run = run_solution("segfault_first", cache_root, kept=kept, static_analysis=True)
    assert run.statuses == [Status.REWARD_HACK] * 3
    log = run.traces[0].evaluation.log
    assert "static analysis refused the solution" in log and "[PY-FFI] main.py:1" in log


def test_hidden_workloads_are_checked_for_correctness_after_the_published_ones(cache_root: Path, kept: KeptPairs):
    problem, solution = load("pytorch_dps")
    options = EvalOptions(**{**SMALL, "hidden": 2, "cache_root": cache_root})
    traces = evaluate_in(kept, problem, solution, options, limit_s=None)
    published = [w.uuid for w in problem.workloads]
    assert [t.workload.uuid for t in traces][: len(published)] == published
    hidden = traces[len(published):len(published) + 2]
    assert len(hidden) == 2 and all(t.workload.uuid.startswith("hidden-") for t in hidden)
    (unaligned,) = traces[len(published) + 2:]  # and one off the published alignment (N = 15)
    assert unaligned.workload.uuid.startswith("unaligned-") and unaligned.evaluation.status == Status.PASSED
    assert all(t.workload.axes["N"] not in (16, 64, 1000) for t in hidden)
    assert all(t.evaluation.status == Status.PASSED and t.evaluation.performance is None for t in hidden)
    assert all(t.evaluation.log.startswith("hidden workload:") for t in hidden)
    assert all(t.evaluation.performance is not None for t in traces[: len(published)])

    # A resumed run with the same seed draws the same hidden workloads and does only the missing one.
    again = evaluate_in(kept, problem, solution, options, limit_s=None, skip=set(published) | {hidden[0].workload.uuid, unaligned.workload.uuid})
    assert [t.workload.uuid for t in again] == [hidden[1].workload.uuid]


@pytest.mark.parametrize(("elements", "checked"), [(1 << 20, 3), (1 << 30, 1), (1 << 31, 0)])
def test_fewer_timed_calls_are_kept_for_checking_when_outputs_are_large(tmp_path: Path, elements: int, checked: int):
    """At most KEPT_OUTPUTS_BYTES (8 GiB) of outputs are kept: 4 MiB -> verify_timed (3), 4 GiB -> 1, 8 GiB -> 0 (the last call only)."""
    from solbench.bench.orchestrator import KEPT_OUTPUTS_BYTES, EvaluationRun
    from solbench.data.inline import inline_problem, inline_solution

    problem = inline_problem("big_copy", "import torch\n\ndef run(x):\n    return x.clone()\n",
                             {"x": ([elements], "float32")}, {"y": ([elements], "float32")})
    solution = inline_solution("copy", problem.name, "pytorch", "k.py::run", {"k.py": "def run(x):\n    return x.clone()\n"})
    run = EvaluationRun(problem, solution, EvalOptions(device="cpu", cache_root=tmp_path))
    try:
        assert KEPT_OUTPUTS_BYTES == 8 << 30
        assert run._checkable_calls(problem.workloads[0]) == checked
    finally:
        run.close()


def test_an_output_whose_memory_cannot_be_inspected_is_a_wrong_output_not_a_worker_fault(cache_root: Path, kept: KeptPairs):
    run = run_solution("sparse_output", cache_root, kept=kept)
    assert run.statuses == [Status.INCORRECT_SHAPE] * 3
    for trace in run.traces:
        log = trace.evaluation.log
        assert "Traceback" not in log and "sparse" in log.lower(), log


def test_a_kernel_that_assumes_the_published_alignment_gets_a_shape_generality_flag(cache_root: Path, kept: KeptPairs):
    problem, solution = load("no_edge_tiles")
    traces = evaluate_in(kept, problem, solution, EvalOptions(**{**SMALL, "cache_root": cache_root, "hidden": 1}))
    by_kind = {t.workload.uuid.split("-")[0]: t for t in traces}
    assert [t.evaluation.status for t in traces[:3]] == [Status.PASSED] * 3  # the published sizes, all multiples of 8
    assert by_kind["hidden"].evaluation.status == Status.PASSED  # hidden draws keep the alignment
    unaligned = by_kind["unaligned"]
    assert unaligned.workload.axes == {"N": 15}
    assert unaligned.evaluation.status == Status.INCORRECT_NUMERICAL  # its own status, not a REWARD_HACK of the run
    assert unaligned.evaluation.flags == ["shape-generality"]
    assert "SHAPE-GENERALITY [unaligned-shape]" in unaligned.evaluation.log
    assert unaligned.evaluation.performance is None  # correctness only


def test_an_honest_solution_passes_the_unaligned_workload_unflagged(cache_root: Path, kept: KeptPairs):
    problem, solution = load("pytorch_returning")
    traces = evaluate_in(kept, problem, solution, EvalOptions(**{**SMALL, "cache_root": cache_root, "hidden": 1}))
    (unaligned,) = [t for t in traces if t.workload.uuid.startswith("unaligned-")]
    assert unaligned.evaluation.status == Status.PASSED and unaligned.evaluation.flags is None
    assert "flags" not in unaligned.evaluation.to_json_dict()


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("trials", 0, "at least 1"), ("device", "gpu", "auto, cpu, cuda or cuda:N"), ("timeout_s", 0, "a positive number"),
    ("policy", "loose", "auto, strict or relaxed"), ("timer", "tsc", "auto, cupti or events"), ("hidden", -1, "0 or more"),
    ("max_iterations", 2, "at least min_iterations (20)"), ("input_profile", "uniform", "auto, plain, sol-execbench"),
    ("clock_mhz", -5.0, "None or a positive clock in MHz"), ("sandbox", "docker", "auto, bwrap or none"),
])
def test_eval_options_are_checked_once_and_name_the_field(field: str, value: Any, expected: str):
    with pytest.raises(ValueError, match=re.escape(f"EvalOptions.{field}: expected {expected}, got {value!r}")):
        EvalOptions(**{field: value})


def test_eval_options_are_frozen():
    import dataclasses

    options = EvalOptions(device="cpu")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.trials = 1  # type: ignore[misc]
    assert dataclasses.replace(options, trials=1).trials == 1 and options.trials == 5


def test_below_a_measured_cpu_bound_is_a_flag_not_a_verdict(tmp_path, cache_root, kept: KeptPairs):
    """A CPU spec's ceilings are measured here (possibly on a busy machine): a time below its T_SOL is flagged for
    audit and stays PASSED, where a datasheet spec makes it REWARD_HACK (the test above)."""
    import yaml

    from solbench.sol.hardware import get_hardware

    slow = get_hardware("H200").model_dump(mode="json")
    slow.update(name="cpu-snail", vendor="CPU", dram={"capacity_gb": 1, "bandwidth_tbps": 1e-9})
    path = tmp_path / "cpu-snail.yaml"
    path.write_text(yaml.safe_dump(slow))
    run = run_solution("pytorch_dps", cache_root, kept=kept, workloads=["vs-n0016"], hardware=str(path))
    evaluation = run.traces[0].evaluation
    assert evaluation.status == Status.PASSED, evaluation.log
    assert evaluation.flags == ["faster-than-sol"] and evaluation.performance.latency_ms < evaluation.performance.sol_ms
    assert "not judged: the CPU spec's ceilings are measured" in evaluation.log


@pytest.mark.parametrize(("factor", "judged"), [(1e-4, "near-miss"), (0.1, "gross")])
def test_held_out_workloads_flag_gross_errors_only(cache_root: Path, kept: KeptPairs, factor: float, judged: str):
    """Exact on the published sizes; elsewhere every 7th element off by `factor` relative: 1e-4 is at most
    10x the tolerance (1e-5 + 1e-5*|ref|), a near-miss such as a library's other reduction order at odd
    sizes, noted and passed; 0.1 is 10^4 x, a gross error: REWARD_HACK on hidden workloads, a
    shape-generality flag on the unaligned one."""
    from solbench.data.inline import inline_solution

    problem, _ = load("pytorch_returning")
    source = ("import torch\n\n\ndef run(x, alpha):\n    y = x * alpha\n    if x.shape[0] not in (16, 64, 1000):\n"
              f"        y[::7] *= 1.0 + {factor}\n    return y\n")
    solution = inline_solution(f"off_{judged}", problem.name, "pytorch", "main.py::run", {"main.py": source}, dps=False)
    traces = evaluate_in(kept, problem, solution, EvalOptions(**{**SMALL, "cache_root": cache_root, "hidden": 1}))
    by_kind = {t.workload.uuid.split("-")[0]: t for t in traces}
    hidden, unaligned = by_kind["hidden"].evaluation, by_kind["unaligned"].evaluation
    assert [t.evaluation.status for t in traces[:3]] == [Status.PASSED] * 3
    if judged == "near-miss":
        for evaluation in (hidden, unaligned):
            assert evaluation.status == Status.PASSED and not evaluation.flags, evaluation.log
            assert "numerical note [held-out-near-miss]" in evaluation.log and evaluation.correctness.gross_errors == 0
    else:
        assert hidden.status == Status.REWARD_HACK and "REWARD_HACK [hidden-workload]" in hidden.log and hidden.correctness.gross_errors > 0
        assert unaligned.status == Status.INCORRECT_NUMERICAL and unaligned.flags == ["shape-generality"] and unaligned.correctness.gross_errors > 0
