"""The public layout through the real evaluator, on the CPU: every reference of the conformance
fixture (tests/fixtures/sol_execbench_layout) passes against itself under two seeds, a problem that does
not load never stops a run, synthesized blobs are said in the trace, the default matched ratio holds
for correctness trials and timed calls alike, and packed fp4 outputs are compared nibble by nibble."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from solbench.bench.correctness import compare_outputs
from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.data.definition import TensorSpec
from solbench.data.loaders import load_problems, load_traces
from solbench.data.solution import Solution
from solbench.data.trace import Status
from solbench.data.workload import Tolerance

LAYOUT = Path(__file__).resolve().parents[1] / "fixtures" / "sol_execbench_layout"
BLOBS_ABSENT = "015_paged_decode_blobs_published_separately"
PROBLEMS = 16
FAST = dict(device="cpu", trials=2, min_iterations=3, budget_s=0.3, warmup=1, verify_timed=1, timeout_s=120.0, hidden=0)


def solbench(*args: object, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "SOLBENCH_BUILD_CACHE": str(tmp_path / "builds")}
    return subprocess.run([sys.executable, "-m", "solbench.cli", *map(str, args)], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("seed", [11, 12])
def test_every_reference_passes_against_itself(tmp_path: Path, seed: int):
    output = tmp_path / "traces.jsonl"
    done = solbench("run", LAYOUT, "--workloads", "smallest:1", "--synthesize-missing-blobs", "--seed", seed, "-o", output, tmp_path=tmp_path)
    assert "Traceback" not in done.stdout + done.stderr
    traces = load_traces(output)
    statuses = {t.definition: t.evaluation.status for t in traces}
    assert statuses == {name: Status.PASSED for name in statuses} and len(statuses) == PROBLEMS, \
        {t.definition: t.evaluation.log[-400:] for t in traces if t.evaluation.status != Status.PASSED}
    assert done.returncode == 0, done.stderr
    for trace in traces:
        environment = trace.evaluation.environment
        assert environment["input_profile"] == "sol-execbench" and environment["precision_policy"] == "relaxed"
        assert environment["seed"] == seed
    blob_trace = next(t for t in traces if t.definition == BLOBS_ABSENT)
    synthesized = [line for line in blob_trace.evaluation.log.splitlines() if "synthesized from the definition" in line]
    assert len(synthesized) == 3 and all("--synthesize-missing-blobs" in line for line in synthesized)


def test_a_refused_problem_does_not_stop_the_run(tmp_path: Path):
    other = LAYOUT / "L1" / "008_integer_and_bool_inputs"
    done = solbench("run", LAYOUT / "FlashInfer-Bench", other, "--workloads", "smallest:1", "-o", tmp_path / "t.jsonl", tmp_path=tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    traces = load_traces(tmp_path / "t.jsonl")
    assert [(t.definition, t.evaluation.status) for t in traces] == [("008_integer_and_bool_inputs", Status.PASSED)]
    refused = [line for line in done.stdout.splitlines() if line.startswith("refused: ")]
    assert len(refused) == 1 and BLOBS_ABSENT in refused[0] and "--synthesize-missing-blobs" in refused[0]
    assert "1/1 workloads passed" in done.stdout
    lines = done.stderr.splitlines()  # the six missing files in one line, with the flag; every one in the run folder's load.log
    assert sum("6 safetensors files named by 2 workload lines do not exist" in line and "--synthesize-missing-blobs" in line for line in lines) == 1
    assert not any("does not exist" in line for line in lines)


def _corrupting_solution(fraction: float) -> Solution:
    """The integer problem's right answer with the first `fraction` of its elements missed: by |v| // 2 + 1,
    beyond the tolerance but within 100x of it (near-misses, which the matched ratio alone judges)."""
    source = (
        "import torch\n\n\n"
        "def run(a, b, c, flag):\n"
        "    out = torch.where(flag, a.to(torch.int64) + b, c)\n"
        f"    wrong = int(out.numel() * {fraction})\n"
        "    out[:wrong] += out[:wrong].abs() // 2 + 1\n"
        "    return out\n"
    )
    return Solution.model_validate({
        "name": f"far_off_{fraction}", "definition": "008_integer_and_bool_inputs", "author": "test",
        "spec": {"languages": ["pytorch"], "entry_point": "main.py::run", "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": source}],
    })


@pytest.mark.parametrize(("fraction", "status"), [(0.005, Status.PASSED), (0.02, Status.INCORRECT_NUMERICAL)])
def test_the_default_matched_ratio_rules_trials_and_timed_calls_alike(tmp_path: Path, fraction: float, status: Status):
    (problem,) = load_problems([LAYOUT / "L1" / "008_integer_and_bool_inputs"])
    large = problem.workloads[1]
    assert large.tolerance is None  # the layout's default: 99 % of the elements must match
    (trace,) = evaluate(problem, _corrupting_solution(fraction), EvalOptions(**FAST, seed=5, cache_root=tmp_path), workloads=[large])
    assert trace.evaluation.status == status, trace.evaluation.log
    assert "gross errors" not in (trace.evaluation.log or "")
    if status == Status.PASSED:
        assert trace.evaluation.correctness.matched_ratio == pytest.approx(1 - fraction, abs=1e-6)
        assert trace.evaluation.performance is not None  # timed, and its checked calls passed the same rule
        assert trace.evaluation.correctness.verified_timed_calls >= 1
        assert "timed-output" not in trace.evaluation.log


# --- packed fp4 outputs ---------------------------------------------------------------------------


def _packed(codes: list[list[int]]) -> torch.Tensor:
    return torch.tensor(codes, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)


@pytest.mark.parametrize(("byte", "nibble", "logical_index"), [(0, "low", [0, 0]), (0, "high", [0, 1]), (3, "high", [1, 3])])
def test_packed_fp4_outputs_compare_both_nibbles(byte: int, nibble: str, logical_index: list[int]):
    declared = {"q": TensorSpec(shape=["M", "K_half"], dtype="float4_e2m1fn_x2")}
    exact = Tolerance(max_atol=0.0, max_rtol=0.0, required_matched_ratio=1.0)
    reference = _packed([[0x21, 0x43], [0x65, 0x17]])  # codes: (1, 2), (3, 4) / (5, 6), (7, 1)
    assert compare_outputs({"q": reference.clone()}, {"q": reference}, declared, exact).status == Status.PASSED
    flipped = reference.view(torch.uint8).clone().reshape(-1)
    flipped[byte] ^= 0x08 if nibble == "low" else 0x80  # the sign bit of one of the two values
    result = compare_outputs({"q": flipped.reshape(2, 2).view(torch.float4_e2m1fn_x2)}, {"q": reference}, declared, exact)
    assert result.status == Status.INCORRECT_NUMERICAL
    assert result.first_mismatch_index == logical_index  # logical: two values per byte
    assert result.matched_ratio == pytest.approx(7 / 8)


def test_packed_fp4_output_of_the_wrong_dtype_is_incorrect_dtype():
    declared = {"q": TensorSpec(shape=["M", "K_half"], dtype="float4_e2m1fn_x2")}
    reference = _packed([[0x21, 0x43]])
    result = compare_outputs({"q": torch.zeros(1, 2, dtype=torch.uint8)}, {"q": reference}, declared, Tolerance())
    assert result.status == Status.INCORRECT_DTYPE


def test_packed_fp4_bytes_are_counted_once_per_byte():
    from solbench.sol.api import analyze_paths
    from solbench.sol.hardware import get_hardware

    results, failures = analyze_paths([LAYOUT / "Quant"], get_hardware("H200"))
    assert failures == []
    by_problem = {(r.problem, r.workload): r for r in results}
    (problem,) = load_problems([LAYOUT / "Quant" / "011_nvfp4_block_scaled_gemm"])
    workload = problem.workloads[0]
    m, n, k = 16, 128, 256
    expected = m * k // 2 + n * k // 2 + (m + n) * k // 16 + m * n * 2  # packed operands, fp8 scales, bf16 output
    assert by_problem[(problem.name, workload.uuid)].bytes_fused == expected
    (quantize,) = load_problems([LAYOUT / "Quant" / "012_nvfp4_quantize_packed_output"])
    m = 4
    result = by_problem[(quantize.name, quantize.workloads[0].uuid)]
    assert result.bytes_fused == m * 256 * 2 + m * 128 + m * 16 * 4  # bf16 in; packed fp4 and fp32 scales out
    assert math.isfinite(result.t_sol_s) and result.t_sol_s > 0
    assert json.dumps(result.to_json())  # serialisable
