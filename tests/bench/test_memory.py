"""Running out of memory is told apart from other failures, with its sizes; in the reference it is
retried once with the solution worker stopped and then reported as memory, not as a bad reference."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.bench.memory import device_memory, memory_failure
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
    first_line = log.splitlines()[0]
    assert "the reference ran out of memory: RuntimeError; allocating" in first_line, log
    assert first_line.endswith("again with the solution worker stopped"), log
    assert "Traceback" not in log
