"""The worker pair: one reference worker can serve several problems in turn, while every solution
gets a fresh solution worker; each trace records the seconds of its phases."""

from __future__ import annotations

from pathlib import Path

from solbench.bench.orchestrator import EvalOptions, evaluate, reference_solution
from solbench.bench.phases import PHASES
from solbench.bench.workers import WorkerPair
from solbench.data.inline import inline_problem
from solbench.data.trace import Status
from test_sandbox import needs_bwrap  # same folder: pytest puts it on sys.path


def test_the_reference_worker_is_kept_across_problems_and_solution_workers_are_not(tmp_path: Path):
    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")},
                            workload_axes=[{}, {}])
    negate = inline_problem("negate", "def run(x):\n    return -x\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=2, hidden=0, budget_s=0.2, min_iterations=2, max_iterations=5, cache_root=tmp_path)
    with WorkerPair.for_options("cpu", options) as pair:
        first = evaluate(double, reference_solution(double), options, workers=pair)
        reference_pid = pair.reference.process.pid
        assert pair.worker is None  # the solution's worker went with its evaluation
        second = evaluate(negate, reference_solution(negate), options, workers=pair)
        assert pair.reference.process.pid == reference_pid
        assert pair.started_workers == 3  # one reference worker, one solution worker per solution
    assert [t.evaluation.status for t in first + second] == [Status.PASSED] * 3, [t.evaluation.log for t in first + second]
    assert pair.reference is None and not pair.session.root.exists()

    phases = [trace.evaluation.phases for trace in first + second]
    assert all(set(p) <= set(PHASES) and all(v >= 0 for v in p.values()) for p in phases)
    assert "start" in phases[0] and "build" in phases[0] and "start" not in phases[1]  # the run's start-up lands in its first trace
    assert all(t.evaluation.performance.launch_overhead_ms is None for t in first + second)  # no launch gate on a CPU
    for p in phases:
        assert {"inputs", "reference", "correctness", "timing", "verify", "sol", "other"} <= set(p)
        assert p["correctness"] > 0 and p["timing"] > 0
    assert phases[2]["start"] < phases[0]["start"]  # loading a problem into a running reference worker is cheaper than starting one


def _spare_solutions(pair: WorkerPair) -> list[int]:
    """The solutions whose workers were started ahead, by identity (equal solutions are still different jobs)."""
    return [id(planned) for planned, _ in pair.spares]


def test_the_next_solution_workers_are_started_ahead_and_taken_only_by_their_own_solutions(tmp_path: Path):
    """plan_next: the planned solutions' workers start while the current one is evaluated (up to
    spares_ahead of them) and each is used by its own solution's attach; the current solution's worker
    starts beside the reference worker (expect); a spare of a solution no longer planned is killed."""
    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    negate = inline_problem("negate", "def run(x):\n    return -x\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=2, hidden=0, budget_s=0.2, min_iterations=2, max_iterations=5, cache_root=tmp_path)
    first, second, third, fourth = (reference_solution(double), reference_solution(negate), reference_solution(negate),
                                    reference_solution(double))
    traces = []
    with WorkerPair.for_options("cpu", options) as pair:
        pair.start_ahead = True
        pair.spares_ahead = 2
        pair.plan_next([second, third, fourth])  # one more than spares_ahead: the last is not started yet
        traces += evaluate(double, first, options, workers=pair)
        assert _spare_solutions(pair) == [id(second), id(third)] and all(process.alive for _, process in pair.spares)
        assert pair.spares_taken == 1 and pair.started_workers == 4  # first (beside the reference), reference, second, third
        third_pid = pair.spares[1][1].process.pid

        pair.plan_next([third])
        traces += evaluate(negate, second, options, workers=pair)
        assert _spare_solutions(pair) == [id(third)] and pair.spares[0][1].process.pid == third_pid  # kept for its own solution
        assert pair.spares_taken == 2 and pair.started_workers == 4

        pair.plan_next([first])  # planned, but its attach never comes
        traces += evaluate(negate, third, options, workers=pair)
        assert pair.spares_taken == 3 and _spare_solutions(pair) == [id(first)]
        planned = pair.spares[0][1]
        pair.plan_next(None)
        traces += evaluate(double, fourth, options, workers=pair)  # fourth's worker starts beside the reference; first's spare is killed
        assert pair.spares == [] and not planned.alive and pair.spares_taken == 4 and pair.started_workers == 6
        assert len(list((pair.session.root / "logs").iterdir())) == 6
    assert [t.evaluation.status for t in traces] == [Status.PASSED] * 4, [t.evaluation.log for t in traces]


def test_without_a_plan_no_worker_is_started_ahead(tmp_path: Path):
    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=1, hidden=0, budget_s=0.2, min_iterations=2, max_iterations=5, cache_root=tmp_path)
    with WorkerPair.for_options("cpu", options) as pair:
        assert pair.start_ahead is False  # on a CPU the start-up would compete with timed calls
        pair.plan_next([reference_solution(double)])
        evaluate(double, reference_solution(double), options, workers=pair)
        assert pair.spares == [] and pair.started_workers == 2


def test_trusted_code_reuses_the_worker_of_the_trusted_code_before_it_and_submitted_code_never_does(tmp_path: Path):
    """References (trusted jobs) go from problem to problem in one solution worker; a submitted solution
    gets a fresh one, and the kept worker is stopped first (it never runs beside or after submitted code)."""
    from solbench.data.inline import inline_solution
    from solbench.exec.jobs import Job, evaluate_job

    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    negate = inline_problem("negate", "def run(x):\n    return -x\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    submitted = inline_solution("mine", "negate", "pytorch", "k.py::run", {"k.py": "def run(x):\n    return -x\n"}, dps=False)
    options = EvalOptions(device="cpu", trials=2, hidden=0, timing=False, cache_root=tmp_path, static_analysis=False)
    traces: list = []
    with WorkerPair.for_options("cpu", options) as pair:
        evaluate_job(Job(double, reference_solution(double), None, trusted=True), options, traces.append, workers=pair)
        kept = pair._kept_trusted
        assert kept is not None and kept.alive and pair.started_workers == 2  # the reference worker and one solution worker
        evaluate_job(Job(negate, reference_solution(negate), None, trusted=True), options, traces.append, workers=pair)
        assert pair._kept_trusted is kept and pair.started_workers == 2  # the same process built and ran the second reference
        evaluate_job(Job(negate, submitted, None), options, traces.append, workers=pair)
        assert not kept.alive and pair._kept_trusted is None and pair.started_workers == 3
        evaluate_job(Job(double, reference_solution(double), None, trusted=True), options, traces.append, workers=pair)
        assert pair.started_workers == 4 and pair._kept_trusted is not None
    assert [t.evaluation.status for t in traces] == [Status.PASSED] * 4, [t.evaluation.log for t in traces]


def test_the_trusted_reference_is_not_assessed_against_the_fp64_oracle_and_the_same_code_submitted_is(tmp_path: Path):
    """The eager reference is the standard of precision: as a trusted job no fp64 run is made for it; the
    same code submitted (untrusted) is assessed as any solution is."""
    from solbench.exec.jobs import Job, evaluate_job

    problem = inline_problem("tanh", "import torch\n\ndef run(x):\n    return torch.tanh(x) * 3\n", {"x": ([64], "float32")}, {"y": ([64], "float32")})
    options = EvalOptions(device="cpu", trials=1, hidden=0, timing=False, cache_root=tmp_path, static_analysis=False)
    trusted: list = []
    submitted: list = []
    with WorkerPair.for_options("cpu", options) as pair:
        evaluate_job(Job(problem, reference_solution(problem), None, trusted=True), options, trusted.append, workers=pair)
        evaluate_job(Job(problem, reference_solution(problem), None), options, submitted.append, workers=pair)
    (kept,), (judged,) = trusted, submitted
    assert kept.evaluation.status == judged.evaluation.status == Status.PASSED
    assert kept.evaluation.correctness.precision is None and kept.evaluation.phases.get("precision", 0.0) == 0.0
    assert judged.evaluation.correctness.precision == "float32" and judged.evaluation.phases["precision"] > 0


PLANTER = '''import os, site
folder = site.getusersitepackages()
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "usercustomize.py"), "w") as planted:
    planted.write("import builtins; builtins.PLANTED_BY_ANOTHER_SOLUTION = True\\n")
with open(os.path.join(os.environ["TMPDIR"], "left-by-the-planter"), "w") as left:
    left.write("x")

def run(x):
    return x * 2
'''

VICTIM = '''import builtins, os
if getattr(builtins, "PLANTED_BY_ANOTHER_SOLUTION", False):
    raise RuntimeError("another solution's usercustomize ran in this worker")
if os.path.exists(os.path.join(os.environ["TMPDIR"], "left-by-the-planter")):
    raise RuntimeError("another solution's scratch file is in this worker's TMPDIR")

def run(x):
    return x * 2
'''


def test_a_submitted_solution_cannot_plant_code_or_files_for_the_next_one_in_the_same_pair(tmp_path: Path):
    """One pair serves a run's solutions in turn. Each submitted solution gets a HOME (TMPDIR, user site, JIT
    caches) of its own, and no user site inside the session: a usercustomize.py planted there by one solution
    had run in the next solution's interpreter before its code was loaded."""
    from solbench.data.inline import inline_solution

    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=1, hidden=0, timing=False, static_analysis=False, cache_root=tmp_path)
    with WorkerPair.for_options("cpu", options) as pair:
        planted = evaluate(double, inline_solution("planter", "double", "pytorch", "main.py::run", {"main.py": PLANTER}, dps=False), options, workers=pair)
        assert [t.evaluation.status for t in planted] == [Status.PASSED], [t.evaluation.log for t in planted]
        (planter_folder,) = (pair.session.root / "solutions").iterdir()
        assert any(planter_folder.rglob("left-by-the-planter"))
        victim = evaluate(double, inline_solution("victim", "double", "pytorch", "main.py::run", {"main.py": VICTIM}, dps=False), options, workers=pair)
        assert [t.evaluation.status for t in victim] == [Status.PASSED], [t.evaluation.log for t in victim]
        (victim_folder,) = (pair.session.root / "solutions").iterdir()  # one per submitted solution; an evaluated one's goes
        assert victim_folder != planter_folder and not planter_folder.exists() and (victim_folder / "home").is_dir()


TRESPASSER = '''import os
folder = os.environ["HOME"]
while folder != "/" and not os.path.exists(os.path.join(folder, "owner.pid")):  # up to the session folder, where it is visible
    folder = os.path.dirname(folder)
if folder == "/":  # not visible: HOME is SESSION/solutions/KEY/home
    folder = os.path.dirname(os.path.dirname(os.path.dirname(os.environ["HOME"])))
for path in (os.path.join(folder, "planted.bin"), os.path.join(folder, "home", "planted"),
             os.path.join(folder, "solutions", "another", "planted"), os.path.join(folder, "owner.pid")):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as planted:
            planted.write("1")
    except OSError:
        pass  # refused, as it should be (or written where nobody else looks: bubblewrap's private /dev/shm)

def run(x):
    return x * 2
'''


@needs_bwrap
def test_under_bubblewrap_a_submitted_solution_writes_only_its_own_folder_of_the_session(tmp_path: Path):
    """The solution's worker may write its build folder and `solutions/<build key>` of the session (its outputs'
    blobs and its HOME), nothing else of the session: not the reference's blobs and logs, not the trusted
    workers' HOME, not another solution's folder, not the owner file that says whose the session is."""
    from solbench.data.inline import inline_solution

    double = inline_problem("double", "def run(x):\n    return x * 2\n", {"x": ([8], "float32")}, {"y": ([8], "float32")})
    options = EvalOptions(device="cpu", trials=1, hidden=0, timing=False, static_analysis=False, cache_root=tmp_path, sandbox="bwrap")
    with WorkerPair.for_options("cpu", options) as pair:
        owner = (pair.session.root / "owner.pid").read_text()
        traces = evaluate(double, inline_solution("trespasser", "double", "pytorch", "main.py::run", {"main.py": TRESPASSER}, dps=False),
                          options, workers=pair)
        assert [t.evaluation.status for t in traces] == [Status.PASSED], [t.evaluation.log for t in traces]
        assert (pair.session.root / "solutions").is_dir()
        assert not (pair.session.root / "planted.bin").exists() and not (pair.session.root / "home" / "planted").exists()
        assert not (pair.session.root / "solutions" / "another").exists()
        assert (pair.session.root / "owner.pid").read_text() == owner
