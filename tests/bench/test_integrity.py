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
