"""Verdicts that honest kernels pass and cheats cannot (issue 29): a Triton kernel without a bounds
mask fails every size that is not a multiple of its block, although its unwritten tail is far below
1% of a large output (gross errors fail whatever the matched ratio; the memory a returned output gets
holds poison, never an earlier call's results); an honest torch.matmul on bf16 against the
fp32-upcast reference passes the unaligned probe M = N = K = 1023 on a GPU (cuBLAS's split-K there
misses by a few ulps: near-misses, noted, not a finding)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.loaders import load_problems
from solbench.data.trace import Status

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
FAST = dict(trials=2, min_iterations=3, budget_s=0.3, warmup=1, timeout_s=240.0, seed=3, static_analysis=False)
BLOCK = 4096
UNMASKED = f'''import torch
import triton
import triton.language as tl


@triton.jit
def _scale_add(x, y, out, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offsets, tl.load(x + offsets) * alpha + tl.load(y + offsets))  # no mask: the tail is never written


def run(x, y, alpha):
    out = torch.empty_like(x)
    _scale_add[(x.numel() // {BLOCK},)](x, y, out, alpha, BLOCK={BLOCK})
    return out
'''


def vec_scale_add(sizes: list[int]):
    return inline_problem("vec_scale_add", "import torch\n\n\ndef run(x, y, alpha):\n    return x * alpha + y\n",
                          {"x": (["N"], "float32"), "y": (["N"], "float32"), "alpha": (None, "float32")}, {"z": (["N"], "float32")},
                          scalars={"alpha": 1.5}, axes={"N": {"type": "var"}}, workload_axes=[{"N": n} for n in sizes],
                          tolerance={"max_atol": 1e-5, "max_rtol": 1e-5, "required_matched_ratio": 0.99})


def test_an_unmasked_tail_fails_every_size_off_its_block_and_passes_the_multiples(tmp_path: Path):
    sizes = [1_048_575, 3 * BLOCK + 1, 20 * BLOCK, 64 * BLOCK]  # two off the block (tails of 4,095 and 1 elements), two on it
    problem = vec_scale_add(sizes)
    solution = inline_solution("unmasked_tail", problem.name, "triton", "main.py::run", {"main.py": UNMASKED}, dps=False)
    traces = evaluate(problem, solution, EvalOptions(device=DEVICE, hidden=0, cache_root=tmp_path, **FAST))
    by_size = {t.workload.axes["N"]: t.evaluation for t in traces}
    for size in sizes[:2]:
        evaluation = by_size[size]
        assert evaluation.status == Status.INCORRECT_NUMERICAL, (size, evaluation.log)
        assert evaluation.correctness.gross_errors == size % BLOCK  # each unwritten element, and nothing else
        assert evaluation.correctness.matched_ratio >= 0.99 or size < 100_000  # the ratio alone would have forgiven the large one
    assert "gross errors" in by_size[1_048_575].log
    for size in sizes[2:]:
        assert by_size[size].status == Status.PASSED, by_size[size].log


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_torch_matmul_passes_the_unaligned_probe_of_the_upcast_reference(tmp_path: Path):
    problem = load_problems([Path(__file__).resolve().parents[1] / "legit" / "problems" / "matmul_bf16_upcast"])[0]
    solution = inline_solution("torch_matmul", problem.name, "pytorch", "main.py::run",
                               {"main.py": "import torch\n\n\ndef run(A, B):\n    return torch.matmul(A, B)\n"}, dps=False)
    published = [w for w in problem.workloads if w.axes["M"] == 1024]
    traces = evaluate(problem, solution, EvalOptions(device="cuda", hidden=1, cache_root=tmp_path, **FAST), workloads=published, held_out=True)
    assert [t.evaluation.status for t in traces] == [Status.PASSED] * len(traces), [t.evaluation.log for t in traces]
    unaligned = next(t for t in traces if t.workload.uuid.startswith("unaligned-"))
    assert unaligned.evaluation.flags in (None, []) and unaligned.evaluation.correctness.gross_errors == 0
