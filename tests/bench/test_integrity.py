"""The worker's integrity snapshot sees every rebinding of what the harness relies on, and nothing
that well-behaved libraries do."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from solbench.bench.integrity import lowers_precision

PATCHES = {
    "time.perf_counter = lambda: 0.0": "time.perf_counter was replaced",
    "torch.cuda.synchronize = lambda *a: None": "torch.cuda.synchronize was replaced",
    "torch.Tensor.clone = lambda self: self": "torch.Tensor.clone was added",
    "torch.Tensor.__eq__ = lambda self, other: True": "torch.Tensor.__eq__ was added",
    "timing.measure.__code__ = (lambda *a, **k: None).__code__": "solbench.bench.timing.measure was replaced",
    "timing.measure.__defaults__ = (1,)": "solbench.bench.timing.measure was replaced",
    "timing.CpuTimer.measure = lambda self, call, gate=None: 0.001": "solbench.bench.timing.CpuTimer.measure was replaced",
    "import types; sys.modules['time'] = types.ModuleType('time')": "sys.modules['time'] was replaced",
    "timing.time = type(sys)('time')": "solbench.bench.timing.time was replaced",
    "del statistics.median": "statistics.median was deleted",
    "torch.manual_seed = lambda seed: None": "torch.manual_seed was replaced",
    "sys.settrace(lambda *a: None)": "a hook was installed or removed (sys.settrace)",
    "import threading; threading.setprofile(lambda *a: None)": "a hook was installed or removed (threading.setprofile)",
    # not changes: what torch.compile, Triton and precision-raising settings do
    "import triton, torch._dynamo; f = torch.compile(lambda x: x * 2, dynamic=True); f(torch.ones(8))": None,
    "torch.backends.cuda.matmul.allow_tf32 = False; torch.set_float32_matmul_precision('highest')": None,
    "import functools; torch.manual_seed = functools.wraps(torch.manual_seed)(lambda seed: None)": None,
}

# One interpreter imports and snapshots once; each patch runs in a forked child of it.
SCRIPT = textwrap.dedent('''
    import json, os, sys, time, statistics, torch
    import solbench.bench.timing as timing
    from solbench.bench.integrity import Snapshot
    snapshot = Snapshot()
    results = {}
    for patch in json.loads(sys.argv[1]):
        read, write = os.pipe()
        if os.fork() == 0:
            os.close(read)
            exec(patch)
            os.write(write, json.dumps(snapshot.changes()).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as handle:
            results[patch] = json.loads(handle.read() or '["(child failed)"]')
        os.wait()
    print("RESULTS:" + json.dumps(results))
''')


@pytest.fixture(scope="module")
def reported() -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(list(PATCHES))], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.split("RESULTS:", 1)[1])


@pytest.mark.parametrize("patch", list(PATCHES))
def test_patches_are_reported_and_library_use_is_not(patch: str, reported: dict[str, list[str]]):
    expected = PATCHES[patch]
    if expected is None:
        assert reported[patch] == []
    else:
        assert any(expected in change for change in reported[patch]), reported[patch]


@pytest.mark.parametrize("name, before, after, lowered", [
    ("torch.backends.cuda.matmul.allow_tf32", False, True, True),
    ("torch.backends.cudnn.allow_tf32", True, False, False),
    ("float32_matmul_precision", "highest", "high", True),
    ("float32_matmul_precision", "medium", "highest", False),
    ("autocast[cpu]", False, True, True),
])
def test_only_less_precise_settings_count_as_a_downgrade(name: str, before, after, lowered: bool):
    assert lowers_precision(name, before, after) is lowered


# --- the worker's own objects, pinned ---------------------------------------------------------------


class _Timer:
    STATE = frozenset({"last_ms"})  # rebound as it works

    def __init__(self) -> None:
        self.last_ms = 0.0
        self.buffer = [1.0]

    def measure(self) -> float:
        return 1.0


class _OtherTimer(_Timer):
    def measure(self) -> float:
        return 0.0


def _shadow(timer: _Timer) -> None:
    timer.measure = lambda: 0.0  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def snapshot():
    from solbench.bench.integrity import Snapshot

    return Snapshot()


@pytest.mark.parametrize("patch, expected", [
    (_shadow, "timer.measure was added (it shadows a method)"),
    (lambda t: setattr(t, "buffer", [1.0]), "timer.buffer was replaced"),
    (lambda t: delattr(t, "buffer"), "timer.buffer was deleted"),
    (lambda t: setattr(t, "__class__", _OtherTimer), "timer.__class__ was replaced"),
    (lambda t: setattr(t, "note", "x"), "timer.note was added"),
    (lambda t: setattr(t, "last_ms", 5.0), None),  # its declared state
    (lambda t: t.buffer.append(2.0), None),  # the same object, changed inside
], ids=["method-shadowed", "rebound", "deleted", "class-swapped", "added", "state", "mutated-in-place"])
def test_a_pinned_object_reports_its_attributes_rebound_added_or_deleted_and_not_its_state(snapshot, patch, expected):
    timer = _Timer()
    snapshot.pin("timer", timer)
    try:
        patch(timer)
        changes = snapshot.changes()
        assert changes == ([] if expected is None else [expected])
    finally:
        del snapshot.pins["timer"]


def test_what_the_harness_rebinds_itself_is_repinned_and_accepted(snapshot):
    timer = _Timer()
    snapshot.pin("timer", timer)
    try:
        timer.buffer = [2.0]
        assert snapshot.changes() == ["timer.buffer was replaced"]
        snapshot.repin("timer", "buffer")
        assert snapshot.changes() == []
    finally:
        del snapshot.pins["timer"]


def test_the_sealed_worker_pins_itself_and_the_timer_it_makes():
    from solbench.bench.worker import Worker

    worker = Worker("solution", "cpu")
    worker.seal()
    snapshot = worker.snapshot  # as serve() holds it
    assert snapshot.changes() == []
    worker._ensure_timer("auto", launch_gate=False)  # the harness sets the timer and flusher: accepted
    worker._harness_set(function=len)
    assert snapshot.changes() == [] and set(snapshot.pins) == {"worker", "worker.timer", "worker.flusher"}
    worker.timer.measure = lambda call, gate=None: 1e-6  # what a solution that reached the worker would do
    worker.flusher = None
    worker.snapshot = None
    assert set(snapshot.changes()) == {"worker.timer.measure was added (it shadows a method)", "worker.flusher was replaced",
                                       "worker.snapshot was replaced"}
