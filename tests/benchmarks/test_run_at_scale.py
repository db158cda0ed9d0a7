"""benchmarks/run_at_scale.py: how the second run over the same baselines is compared with the first, when
both ran whole and when either was cut at its limit."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType


def _run(wall_s: float, cut: bool, timeline: list[tuple[float, int]]) -> dict:
    return {"wall_s": wall_s, "cut_at_limit": cut, "timeline": timeline, "problems_scored": timeline[-1][1] if timeline else 0}


def test_two_whole_runs_are_compared_by_their_walls(run_at_scale: ModuleType) -> None:
    first, again = _run(300.0, False, [(20.0, 1), (300.0, 10)]), _run(100.0, False, [(5.0, 1), (100.0, 10)])
    assert run_at_scale.second_run_speedup(first, again) == {"problems": 10, "first_s": 300.0, "again_s": 100.0, "ratio": 3.0}


def test_a_cut_first_run_is_compared_on_the_problems_it_finished(run_at_scale: ModuleType) -> None:
    """The first run finished 4 problems before its limit; the second all 10: each is timed to its 4th problem."""
    first = _run(480.0, True, [(60.0, 1), (200.0, 3), (400.0, 4)])
    again = _run(150.0, False, [(10.0, 1), (50.0, 4), (150.0, 10)])
    assert run_at_scale.second_run_speedup(first, again) == {"problems": 4, "first_s": 400.0, "again_s": 50.0, "ratio": 8.0}


def test_a_problem_finished_after_the_last_sample_is_left_out(run_at_scale: ModuleType) -> None:
    """Seen on an H100: the cut run's summary said 55 problems, its last sample 54 (at 223.3 s)."""
    first = {**_run(271.6, True, [(32.0, 1), (223.3, 54)]), "problems_scored": 55}
    again = {**_run(101.2, True, [(20.0, 1), (44.0, 54), (45.0, 55), (75.1, 61)]), "problems_scored": 61}
    assert run_at_scale.second_run_speedup(first, again) == {"problems": 54, "first_s": 223.3, "again_s": 44.0, "ratio": 5.08}


def test_a_run_that_finished_nothing_has_no_ratio(run_at_scale: ModuleType) -> None:
    first, again = _run(480.0, True, []), _run(100.0, False, [(10.0, 1)])
    speedup = run_at_scale.second_run_speedup(first, again)
    assert speedup["problems"] == 0 and speedup["ratio"] is None
    sampled_before_any = _run(480.0, True, [(30.0, 0), (480.0, 0)])  # progress seen, nothing finished: not a time to 0 problems
    assert run_at_scale.second_run_speedup(sampled_before_any, again) == {"problems": 0, "first_s": None, "again_s": None, "ratio": None}
    assert run_at_scale.seconds_to([(10.0, 1), (30.0, 3)], 2) == 30.0 and run_at_scale.seconds_to([(10.0, 1)], 2) is None


def test_the_compile_log_is_summed_per_mode_with_the_slowest_first(run_at_scale: ModuleType, tmp_path: Path) -> None:
    log = tmp_path / "compile-ahead.jsonl"
    rows = [("norm", "default", 2.0, None, 5.0), ("norm", "max-autotune-no-cudagraphs", 6.0, None, 9.0),
            ("resnet", "max-autotune-no-cudagraphs", 175.0, None, 180.0), ("moe", "default", 4.0, "InductorError: x", 12.0)]
    log.write_text("".join(json.dumps({"problem": p, "mode": m, "seconds": s, "error": e, "ended_s": t}) + "\n" for p, m, s, e, t in rows))
    assert run_at_scale.compiles_ahead(log)["pauses"] is None
    pauses = {"pauses": 40, "pause_wait_s": 0.8, "stopped": 3, "scope": "process", "ended_s": 181.0}
    with log.open("a") as file:
        file.write(json.dumps(pauses) + "\n")
    found = run_at_scale.compiles_ahead(log)
    assert found["pauses"] == pauses
    assert (found["finished"], found["failed"], found["seconds"], found["last_ended_s"]) == (4, 1, 187.0, 180.0)
    assert found["by_mode"] == {"default": {"count": 2, "seconds": 6.0, "median_s": 3.0},
                                "max-autotune-no-cudagraphs": {"count": 2, "seconds": 181.0, "median_s": 90.5}}
    assert found["slowest"][:2] == ["resnet max-autotune-no-cudagraphs: 175.0 s", "norm max-autotune-no-cudagraphs: 6.0 s"]
    assert run_at_scale.compiles_ahead(tmp_path / "missing.jsonl") == {}


def test_a_run_is_cut_with_ctrl_c_and_killed_if_it_stays(run_at_scale: ModuleType) -> None:
    """A run that leaves on Ctrl-C is given the chance (its exit code says it handled it); one that ignores it is killed."""
    polite = subprocess.Popen([sys.executable, "-c", "import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    raise SystemExit(7)"])
    time.sleep(1.0)
    run_at_scale.stop(polite, grace_s=20)
    assert polite.returncode == 7
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)"])
    time.sleep(1.0)
    started = time.monotonic()
    run_at_scale.stop(stubborn, grace_s=1)
    assert stubborn.returncode == -9 and time.monotonic() - started < 10
