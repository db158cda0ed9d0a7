"""Running out of memory is told apart from other failures, with its sizes; in the reference it is
retried once with the solution worker stopped and then reported as memory, not as a bad reference."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from solbench.bench.memory import (
    ALLOCATOR_ENV, SHARED_DEVICE_ALLOCATOR, SHARED_DEVICE_ENV, device_memory, memory_failure, return_cached_memory, shared_device_environment,
    shares_device,
)
from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status

TOO_MUCH = 1 << 62  # bytes no machine has: the allocator refuses at once, without touching memory


def test_a_failed_cpu_allocation_is_out_of_memory_with_its_sizes():
    with pytest.raises(RuntimeError) as raised:
        torch.empty(TOO_MUCH, dtype=torch.uint8)
    described = memory_failure(raised.value, "cpu")
    assert described is not None and described.startswith("RuntimeError")
    assert f"allocating {TOO_MUCH / 2**30:.2f} GiB" in described
    free, total = device_memory("cpu")
    assert 0 < free <= total and "host memory" in described and "free of" in described


def test_a_python_memory_error_and_a_cuda_style_message_are_out_of_memory():
    with pytest.raises(MemoryError) as raised:
        bytearray(TOO_MUCH)
    assert memory_failure(raised.value, "cpu").startswith("MemoryError")
    cuda_message = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB")
    assert "allocating 2.00 GiB" in memory_failure(cuda_message, "cpu")


def test_other_failures_are_not_out_of_memory():
    assert memory_failure(ValueError("out of memory"), "cpu") is None  # only allocator errors count
    assert memory_failure(RuntimeError("shape mismatch"), "cpu") is None


def test_a_reference_out_of_memory_is_retried_once_and_reported_as_memory(tmp_path: Path):
    problem = inline_problem("hungry", f"import torch\n\ndef run(x):\n    torch.empty({TOO_MUCH}, dtype=torch.uint8)\n    return x * 2\n",
                             {"x": ([16], "float32")}, {"y": ([16], "float32")})
    solution = inline_solution("double", problem.name, "pytorch", "k.py::run", {"k.py": "def run(x):\n    return x * 2\n"}, dps=False)
    options = EvalOptions(device="cpu", trials=1, hidden=0, timing=False, cache_root=tmp_path)
    (trace,) = evaluate(problem, solution, options)
    log = trace.evaluation.log
    assert trace.evaluation.status == Status.INVALID_REFERENCE, log
    note, failure = log.splitlines()[:2]
    assert note.startswith("note: out of memory with other work on the device") and note.endswith("out of memory again"), log
    assert "the reference ran out of memory: RuntimeError; allocating" in failure, log
    assert failure.endswith("again with the solution worker stopped"), log
    assert "Traceback" not in log


def test_a_solution_out_of_memory_is_tried_again_alone_then_counts_and_the_run_goes_on(tmp_path: Path):
    problem = inline_problem("plain", "def run(x):\n    return x * 2\n", {"x": (["n"], "float32")}, {"y": (["n"], "float32")},
                             axes={"n": {"type": "var"}}, workload_axes=[{"n": 16}, {"n": 32}])
    hungry = inline_solution("hungry", problem.name, "pytorch", "k.py::run",
                             {"k.py": f"import torch\n\ndef run(x):\n    torch.empty({TOO_MUCH}, dtype=torch.uint8)\n    return x * 2\n"}, dps=False)
    traces = evaluate(problem, hungry, EvalOptions(device="cpu", trials=1, hidden=0, timing=False, cache_root=tmp_path))
    assert len(traces) == 2
    for trace in traces:
        log = trace.evaluation.log
        assert trace.evaluation.status == Status.RUNTIME_ERROR, log
        note = log.splitlines()[0]
        assert note.startswith("note: out of memory with other work on the device (") and "can't allocate memory" in note, log
        assert note.endswith("evaluated again with the device alone in this process: out of memory again"), log


def test_other_failures_are_not_tried_again(tmp_path: Path):
    problem = inline_problem("plain", "def run(x):\n    return x * 2\n", {"x": ([16], "float32")}, {"y": ([16], "float32")})
    failing = inline_solution("failing", problem.name, "pytorch", "k.py::run", {"k.py": "def run(x):\n    raise ValueError('no')\n"}, dps=False)
    (trace,) = evaluate(problem, failing, EvalOptions(device="cpu", trials=1, hidden=0, timing=False, cache_root=tmp_path))
    assert trace.evaluation.status == Status.RUNTIME_ERROR
    assert "evaluated again" not in trace.evaluation.log and "ValueError: no" in trace.evaluation.log


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_memory_held_by_another_evaluation_is_waited_out_and_the_workload_passes(tmp_path: Path):
    """Another evaluation of this process (a thread sharing the device) holds all but 3 GiB while the solution
    asks for 8 GiB: the first attempt runs out of memory, the second waits for the device alone (the other
    evaluation lets go once nobody else may start) and passes."""
    import threading

    from solbench.bench import exclusive

    torch.cuda.init()
    held = threading.Event()

    def other_evaluation() -> None:
        with exclusive.device_shared():
            free, _ = torch.cuda.mem_get_info()
            block = torch.empty(free - (3 << 30), dtype=torch.uint8, device="cuda")
            held.set()
            while not exclusive._share._waiting_timed:  # until someone waits for the device alone
                time.sleep(0.05)
            del block
            torch.cuda.empty_cache()

    problem = inline_problem("plain", "def run(x):\n    return x * 2\n", {"x": ([1024], "float32")}, {"y": ([1024], "float32")})
    scratchy = inline_solution("scratchy", problem.name, "pytorch", "k.py::run",
                               {"k.py": "import torch\n\ndef run(x):\n    torch.empty(8 << 30, dtype=torch.uint8, device=x.device)\n    return x * 2\n"},
                               dps=False)
    holder = threading.Thread(target=other_evaluation, daemon=True)
    holder.start()
    assert held.wait(60)
    (trace,) = evaluate(problem, scratchy, EvalOptions(device="cuda", trials=1, hidden=0, timing=False, cache_root=tmp_path))
    holder.join(60)
    log = trace.evaluation.log
    assert trace.evaluation.status == Status.PASSED, log
    assert log.splitlines()[0].endswith("evaluated again with the device alone in this process: done"), log


@pytest.mark.parametrize(("value", "shared"), [(None, False), ("", False), ("0", False), ("1", True), ("yes", True)])
def test_sharing_the_device_is_asked_for_by_the_environment(monkeypatch: pytest.MonkeyPatch, value: str | None, shared: bool):
    if value is None:
        monkeypatch.delenv(SHARED_DEVICE_ENV, raising=False)
    else:
        monkeypatch.setenv(SHARED_DEVICE_ENV, value)
    assert shares_device() is shared


def test_a_reference_passes_against_itself_with_the_device_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The workers inherit SOLBENCH_SHARED_DEVICE (a kept prefix of the scrubbed environment) and still answer every request."""
    monkeypatch.setenv(SHARED_DEVICE_ENV, "1")
    problem = inline_problem("triple", "def run(x):\n    return x * 3\n", {"x": ([64], "float32")}, {"y": ([64], "float32")})
    solution = inline_solution("triple", problem.name, "pytorch", "k.py::run", {"k.py": "def run(x):\n    return x * 3\n"}, dps=False)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    (trace,) = evaluate(problem, solution, EvalOptions(device=device, trials=2, hidden=0, timing=False, cache_root=tmp_path))
    assert trace.evaluation.status == Status.PASSED, trace.evaluation.log


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cached_device_memory_is_given_back_only_when_the_device_is_shared(monkeypatch: pytest.MonkeyPatch):
    size = 1 << 30  # larger than the free room of any segment that other tests' live tensors keep reserved

    def cache_some() -> int:
        block = torch.empty(size, dtype=torch.uint8, device="cuda")
        del block
        return torch.cuda.memory_reserved()

    monkeypatch.delenv(SHARED_DEVICE_ENV, raising=False)
    torch.cuda.empty_cache()
    live = torch.cuda.memory_reserved()  # segments holding tensors still alive in this process (earlier tests): not cache
    assert cache_some() >= live + size
    return_cached_memory("cuda:0")
    assert torch.cuda.memory_reserved() >= live + size  # not shared: the allocator keeps its cache
    monkeypatch.setenv(SHARED_DEVICE_ENV, "1")
    return_cached_memory("cpu")
    assert torch.cuda.memory_reserved() >= live + size  # asked for another device: nothing happens
    return_cached_memory("cuda:0")
    assert torch.cuda.memory_reserved() == live


def test_a_shared_device_run_gets_expandable_segments_unless_the_user_chose_an_allocator():
    made = shared_device_environment({"PATH": "/bin", SHARED_DEVICE_ENV: "0"})
    assert made == {"PATH": "/bin", SHARED_DEVICE_ENV: "1", ALLOCATOR_ENV: SHARED_DEVICE_ALLOCATOR}
    assert shared_device_environment({ALLOCATOR_ENV: "max_split_size_mb:512"})[ALLOCATOR_ENV] == "max_split_size_mb:512"


# Frees a 1 GiB block, puts a small tensor in its place and asks for 1 GiB again: what the allocator reserved then.
_RESERVED_AFTER_REUSE = """
import torch
big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
del big
small = torch.empty(16 << 20, dtype=torch.uint8, device="cuda")
again = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
print(torch.cuda.memory_reserved())
"""


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_expandable_segments_keep_a_freed_large_block_whole_for_the_next_large_one():
    """Why shared-device runs set them: by default the small tensor splits the freed 1 GiB block and the
    second 1 GiB needs a segment of its own; with expandable segments the one segment grows by the small part."""
    def reserved(environment: dict[str, str]) -> int:
        done = subprocess.run([sys.executable, "-c", _RESERVED_AFTER_REUSE], env=environment, capture_output=True, text=True, check=True)
        return int(done.stdout.strip())

    plain = {name: value for name, value in os.environ.items() if name != ALLOCATOR_ENV}
    assert reserved(plain) >= 2 << 30
    assert reserved(shared_device_environment(plain)) < (1 << 30) + (256 << 20)
