"""Every KernelBench-style test file and every bundled problem: all ops covered, and the fused bytes
are the compulsory minimum: each input and output once at its declared size, except tensors that
are only partly touched, which count the touched part (listed below, derived by hand)."""

from __future__ import annotations

from math import prod
from pathlib import Path
from typing import Callable

import pytest

from solbench.dataset import bundled_problems_path
from solbench.sol.analysis import analyze
from solbench.sol.hardware import get_hardware
from solbench.data.loaders import scan
from solbench.data.problem import Problem

KERNELBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
KERNELBENCH_FILES = sorted(KERNELBENCH.glob("*.py"))

# problem name -> {input name: axes -> bytes touched}, for inputs that no op reads whole.
PARTLY_TOUCHED: dict[str, dict[str, Callable[[dict[str, int]], int]]] = {
    # nn.Embedding(4096, 128) fp32 looked up with ids [8, 128]: 1024 ids x one 128-float row (512 B)
    # = 524,288 B of the 2,097,152 B table.
    "13_embedding": {"embedding_weight": lambda axes: 8 * 128 * 128 * 4},
    # mask buffer [1, 64, 64] fp32 used as mask[:, :T, :T] with T = 32: 32 x 32 floats = 4,096 B of 16,384 B.
    "16_masked_attention_buffer": {"mask": lambda axes: 32 * 32 * 4},
    # bundled: F.embedding(input_ids[num_tokens], weight[128256, 4096] bf16): at most one 8 KiB row per
    # token (and never more than the 1 GB table).
    "embedding_llama3_8b": {"weight": lambda axes: min(axes["num_tokens"], 128256) * 4096 * 2},
}


def _compulsory(problem: Problem, workload) -> tuple[int, dict[str, int]]:
    """Sum over inputs and outputs of their declared storage size (partly touched inputs: the touched part)."""
    axes = problem.axes(workload)
    exceptions = PARTLY_TOUCHED.get(problem.name, {})
    sizes: dict[str, int] = {}
    for name, tensor in [*problem.definition.inputs.items(), *problem.definition.outputs.items()]:
        if tensor.shape is None:  # a Python scalar: passed by value, not read from memory
            continue
        sizes[name] = tensor.dtype.storage_bytes(prod(tensor.resolve_shape(axes)))
    for name, touched in exceptions.items():
        assert name in problem.definition.inputs, f"{problem.name} has no input {name}"
        sizes[name] = min(sizes[name], touched(axes))
    return sum(sizes.values()), sizes


def _load(path: Path) -> list[Problem]:
    found = scan(path)
    problems = [loaded.problem for loaded in found if loaded.problem is not None]
    assert problems, [str(i) for loaded in found for i in loaded.issues]
    return problems


def _check(problem: Problem) -> None:
    hardware = get_hardware("H200")
    for workload in problem.workloads:
        result = analyze(problem, workload, hardware)
        assert result.uncovered_ops == [], f"{problem.name}: no cost rule for {result.uncovered_ops}"
        expected, sizes = _compulsory(problem, workload)
        assert result.bytes_fused == expected, (problem.name, workload.uuid, sizes)
        assert result.bytes_cache_aware >= result.bytes_fused
        assert result.bytes_unfused >= result.bytes_fused


def test_there_are_kernelbench_files() -> None:
    assert len(KERNELBENCH_FILES) >= 20


@pytest.mark.parametrize("path", KERNELBENCH_FILES, ids=[p.stem for p in KERNELBENCH_FILES])
def test_kernelbench_file_fused_bytes_are_compulsory(path: Path) -> None:
    (problem,) = _load(path)
    assert problem.name == path.stem
    _check(problem)


def test_partly_touched_exceptions_are_not_whole_reads() -> None:
    """The hand-listed exceptions: the whole-tensor count would be larger by exactly the untouched part."""
    (embedding,) = _load(KERNELBENCH / "13_embedding.py")
    assert embedding.definition.inputs["embedding_weight"].shape == [4096, 128]
    result = analyze(embedding, embedding.workloads[0], get_hardware("H200"))
    assert result.bytes_fused == 8 * 128 * 8 + 8 * 128 * 128 * 4 + 8 * 128 * 128 * 4  # ids + rows read + output
    (masked,) = _load(KERNELBENCH / "16_masked_attention_buffer.py")
    assert masked.definition.inputs["mask"].shape == [1, 64, 64]
    result = analyze(masked, masked.workloads[0], get_hardware("H200"))
    x = out = 4 * 32 * 64 * 4
    assert result.bytes_fused == x + 192 * 64 * 4 + 192 * 4 + 32 * 32 * 4 + out


def _bundled() -> list[Path]:
    root = bundled_problems_path()
    if not root.is_dir():
        return []
    return [root]


def _bundled_problems() -> list[Problem]:
    problems: list[Problem] = []
    for root in _bundled():
        problems += [loaded.problem for loaded in scan(root) if loaded.problem is not None]
    return problems


BUNDLED = _bundled_problems()


@pytest.mark.skipif(not BUNDLED, reason=f"no bundled problem yet in {bundled_problems_path()}")
@pytest.mark.parametrize("problem", BUNDLED or [None], ids=[p.name for p in BUNDLED] or ["none"])
def test_bundled_problem_fused_bytes_are_compulsory(problem: Problem) -> None:
    _check(problem)
