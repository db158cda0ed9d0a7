"""On a CUDA GPU: Triton and CUDA C++ solutions build and pass, timing is by CUPTI, and work a
solution leaves on a side stream is inside its measured time."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.bench.orchestrator import HIDDEN_PREFIX, EvalOptions, evaluate, reference_solution
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

N = 1 << 22
ADD = inline_problem(
    "vector_add_gpu",
    "import torch\n\ndef run(a, b):\n    return a + b\n",
    {"a": (["N"], "float32"), "b": (["N"], "float32")},
    {"c": (["N"], "float32")},
    axes={"N": {"type": "var"}},
    workload_axes=[{"N": N}, {"N": 12345}],
    tolerance={"max_atol": 1e-6, "max_rtol": 1e-6},
)

TRITON_ADD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _add(a, b, c, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(c + offsets, tl.load(a + offsets, mask=mask) + tl.load(b + offsets, mask=mask), mask=mask)


def add(a, b, c):
    n = a.numel()
    _add[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
'''

CUDA_ADD = '''
#include <torch/extension.h>

__global__ void add_kernel(const float* a, const float* b, float* c, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

void add(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    int64_t n = a.numel();
    add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
}
'''


def _options(tmp_path: Path, **changes) -> EvalOptions:
    base = dict(device="cuda", trials=3, min_iterations=20, budget_s=2.0, cache_root=tmp_path / "builds", seed=1)
    base.update(changes)
    return EvalOptions(**base)


def _assert_all_passed(traces: list) -> None:
    """The two published workloads and the hidden ones drawn beside them."""
    published = [t for t in traces if not t.workload.uuid.startswith(HIDDEN_PREFIX)]
    assert len(published) == 2 and len(traces) == 2 + EvalOptions().hidden, [t.workload.uuid for t in traces]
    assert all(t.evaluation.status == Status.PASSED for t in traces), [(t.evaluation.status, t.evaluation.log) for t in traces]


def test_triton_solution_builds_and_passes(tmp_path: Path):
    solution = inline_solution("add-triton", ADD.name, "triton", "kernel.py::add", {"kernel.py": TRITON_ADD})
    traces = evaluate(ADD, solution, _options(tmp_path))
    _assert_all_passed(traces)
    environment = traces[0].evaluation.environment
    if environment["sandbox"] != "bubblewrap":  # outside bubblewrap the orchestrator can map the worker's tensors
        assert environment["transfer"] == "CUDA IPC", environment
    performance = traces[0].evaluation.performance
    assert performance.timing_method == "cupti" and performance.latency_ms > 0
    assert performance.sol_ms is not None and performance.latency_ms >= performance.sol_ms


def test_the_first_workloads_bound_priced_during_start_up_is_the_bound(tmp_path: Path):
    """The first workload's T_SOL is priced in a thread while the workers start: it is the same
    figure as the analysis gives on its own, and so is the next workload's (priced as before)."""
    from solbench.sol.api import sol_time_ms
    from solbench.sol.calibrate import spec_for_run

    traces = evaluate(ADD, reference_solution(ADD), _options(tmp_path, hidden=0))
    spec = spec_for_run(None, "cuda")
    for trace in traces:
        assert trace.evaluation.status == Status.PASSED, trace.evaluation.log
        expected = sol_time_ms(ADD, trace.workload, spec, EvalOptions().policy)
        assert trace.evaluation.performance.sol_ms == pytest.approx(expected, rel=1e-12), trace.workload.uuid
    assert traces[0].evaluation.performance.sol_ms > traces[1].evaluation.performance.sol_ms  # N = 4 Mi, then 12345


HOST_GAP_ADD = """
import torch


def add(a, b, c):
    torch.mul(a, 1.0, out=c)
    for _ in range(200):  # host work between two launches, as a Python loop of a multi-kernel solution has
        torch.empty(1)
    torch.add(c, b, out=c)
"""


def test_launch_overhead_is_the_host_gap_that_the_gate_hides(tmp_path: Path):
    """One kernel: (almost) no launch overhead; two kernels with host work between them: the gap is
    not in latency_ms (gated) but is in launch_overhead_ms (the ungated series)."""
    single = evaluate(ADD, inline_solution("add-triton", ADD.name, "triton", "kernel.py::add", {"kernel.py": TRITON_ADD}), _options(tmp_path, hidden=0))
    gapped = evaluate(ADD, inline_solution("add-gap", ADD.name, "pytorch", "kernel.py::add", {"kernel.py": HOST_GAP_ADD}), _options(tmp_path, hidden=0))
    for traces in (single, gapped):
        assert all(t.evaluation.status == Status.PASSED for t in traces), [t.evaluation.log for t in traces]
    one, two = single[0].evaluation.performance, gapped[0].evaluation.performance
    assert one.launch_overhead_ms is not None and one.launch_overhead_ms < 0.02, one
    assert two.launch_overhead_ms is not None and two.launch_overhead_ms > 0.05, two  # 200 host allocations: well over 50 us
    assert two.launch_overhead_ms > 3 * one.launch_overhead_ms


def test_cuda_cpp_solution_builds_and_passes(tmp_path: Path):
    solution = inline_solution("add-cuda", ADD.name, "cuda_cpp", "add.cu::add", {"add.cu": CUDA_ADD})
    traces = evaluate(ADD, solution, _options(tmp_path))
    _assert_all_passed(traces)
    assert traces[0].evaluation.performance.timing_method == "cupti"


MATMUL = inline_problem(
    "matmul_side_stream",
    "import torch\n\ndef run(a, b):\n    return a @ b\n",
    {"a": ([4096, 4096], "bfloat16"), "b": ([4096, 4096], "bfloat16")},
    {"c": ([4096, 4096], "bfloat16")},
    tolerance={"max_atol": 1e-1, "max_rtol": 2e-2},
)
SIDE_STREAM = '''
import torch

_side = []


def matmul(a, b, c):
    if not _side:
        _side.append(torch.cuda.Stream())
    side = _side[0]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.mm(a, b, out=c)
    torch.cuda.current_stream().wait_stream(side)
'''
UNJOINED = SIDE_STREAM.replace("    torch.cuda.current_stream().wait_stream(side)\n", "    # returns without joining the side stream back\n")
MAIN_STREAM = "import torch\n\ndef matmul(a, b, c):\n    torch.mm(a, b, out=c)\n"


def test_side_stream_work_is_inside_the_measured_time(tmp_path: Path):
    side = inline_solution("mm-side", MATMUL.name, "pytorch", "k.py::matmul", {"k.py": SIDE_STREAM})
    main = inline_solution("mm-main", MATMUL.name, "pytorch", "k.py::matmul", {"k.py": MAIN_STREAM})
    (side_trace,) = evaluate(MATMUL, side, _options(tmp_path))
    (main_trace,) = evaluate(MATMUL, main, _options(tmp_path))
    assert side_trace.evaluation.status == main_trace.evaluation.status == Status.PASSED
    side_ms = side_trace.evaluation.performance.latency_ms
    main_ms = main_trace.evaluation.performance.latency_ms
    assert side_trace.evaluation.performance.timing_method == "cupti"
    assert abs(side_ms - main_ms) <= 0.15 * main_ms, (side_ms, main_ms)


def test_work_left_on_an_unjoined_stream_is_a_reward_hack(tmp_path: Path):
    unjoined = inline_solution("mm-unjoined", MATMUL.name, "pytorch", "k.py::matmul", {"k.py": UNJOINED})
    (trace,) = evaluate(MATMUL, unjoined, _options(tmp_path))
    assert trace.evaluation.status == Status.REWARD_HACK, trace.evaluation.log
    assert trace.evaluation.log.startswith("REWARD_HACK [unjoined-stream]"), trace.evaluation.log
