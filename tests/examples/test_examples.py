"""examples/: each worked solution matches its source file, audits clean and passes `solbench eval`
(PyTorch and Triton on the CPU; CUDA on a GPU). The CUDA sources, example and skeleton, compile with
nvcc against torch's headers (opt-in on a CPU machine: SOLBENCH_NVCC_TESTS=1, minutes on 2 cores)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from solbench.bench.guards.static import analyze_solution
from solbench.cli import app
from solbench.data.loaders import load_problems, load_solution
from solbench.data.skeletons import skeleton
from solbench.dataset import bundled_problems_path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SOLUTIONS = sorted(EXAMPLES.glob("*/solution.json"))
PROBLEM = bundled_problems_path() / "silu_and_mul_llama3_8b"
SMALLEST = "f2f3faa3"  # num_tokens = 1


def test_there_is_one_example_per_language() -> None:
    languages = {load_solution(path).spec.language_list[0].value for path in SOLUTIONS}
    assert languages == {"pytorch", "triton", "cuda_cpp"}


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.parent.name)
def test_example_sources_match_and_audit_clean(path: Path) -> None:
    solution = load_solution(path)
    for source in solution.sources:
        assert (path.parent / source.path).read_text() == source.content, f"{source.path} differs from its copy in {path.name}"
    assert analyze_solution(solution, "relaxed") == []


def _eval(path: Path, device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The evaluation of the smallest workload; `solbench eval` exits 0 exactly when it PASSED."""
    monkeypatch.setenv("SOLBENCH_BUILD_CACHE", str(tmp_path / "cache"))
    if device == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    result = CliRunner().invoke(app, ["eval", str(PROBLEM), "--solution", str(path), "--workload", SMALLEST, "--no-timing", "--trials", "2",
                                      "--hidden", "0", "--device", device, "--json"])
    evaluation = json.loads(result.stdout[result.stdout.index("["):])[0]["evaluation"]
    assert result.exit_code == (0 if evaluation["status"] == "PASSED" else 1), result.output
    return evaluation


@pytest.mark.parametrize("name", ["silu_and_mul_pytorch", "silu_and_mul_triton"])
def test_python_examples_pass_eval_on_the_cpu(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluation = _eval(EXAMPLES / name / "solution.json", "cpu", tmp_path, monkeypatch)
    assert evaluation["status"] == "PASSED", evaluation["log"][-2000:]


CUDA_AVAILABLE = torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA_AVAILABLE, reason="needs a CUDA device")
def test_cuda_example_passes_eval_on_the_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evaluation = _eval(EXAMPLES / "silu_and_mul_cuda" / "solution.json", "cuda", tmp_path, monkeypatch)
    assert evaluation["status"] == "PASSED", evaluation["log"][-2000:]


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA_AVAILABLE, reason="needs a CUDA device")
def test_cuda_skeleton_builds_and_runs_on_the_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As written the skeleton zero-fills: it builds and runs, and fails on numbers, not on a build or a crash."""
    problem = load_problems([PROBLEM])[0]
    path = tmp_path / "skeleton.json"
    path.write_text(json.dumps(skeleton(problem, "cuda_cpp", "returning").solution.to_json_dict()))
    evaluation = _eval(path, "cuda", tmp_path, monkeypatch)
    assert evaluation["status"] == "INCORRECT_NUMERICAL", evaluation["log"][-2000:]


def _nvcc_compile(sources: dict[str, str], folder: Path) -> None:
    """Compiles each CUDA source to an object file with torch's headers and extension flags. A CPU
    build of torch lacks one generated CUDA config header, which is supplied here."""
    from torch.utils import cpp_extension

    shim = folder / "shim" / "c10" / "cuda" / "impl"
    shim.mkdir(parents=True)
    if not (Path(cpp_extension.include_paths()[0]) / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").exists():
        (shim / "cuda_cmake_macros.h").write_text("#pragma once\n")
    # One translation unit for all sources (each in a namespace of its own): torch's headers are parsed once.
    unit = ["#include <torch/extension.h>", "#include <c10/cuda/CUDAException.h>", "#include <c10/cuda/CUDAStream.h>", "#include <cuda_bf16.h>"]
    for index, (name, text) in enumerate(sources.items()):
        (folder / f"source{index}.cu").write_text(text)
        unit += [f"namespace source{index} {{  // {name}", f'#include "source{index}.cu"', "}"]
    (folder / "unit.cu").write_text("\n".join(unit) + "\n")
    includes = [f"-I{folder / 'shim'}", *(f"-I{path}" for path in cpp_extension.include_paths()), f"-I{sysconfig.get_paths()['include']}"]
    command = ["nvcc", "-c", "-std=c++17", "-arch=sm_90", *includes, *cpp_extension.COMMON_NVCC_FLAGS, "-DTORCH_EXTENSION_NAME=check",
               "-DTORCH_API_INCLUDE_EXTENSION_H", "-Xcompiler", "-fPIC", str(folder / "unit.cu"), "-o", str(folder / "unit.o")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (folder / "unit.o").stat().st_size > 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.skipif(os.environ.get("SOLBENCH_NVCC_TESTS") != "1", reason="slow on a CPU machine (minutes): set SOLBENCH_NVCC_TESTS=1")
def test_cuda_example_and_skeletons_compile_with_nvcc(tmp_path: Path) -> None:
    problems = {p.name: p for p in load_problems([bundled_problems_path()])}
    sources = {
        "example": (EXAMPLES / "silu_and_mul_cuda" / "kernel.cu").read_text(),
        "skeleton dps": skeleton(problems["fused_add_rmsnorm_llama3_8b"], "cuda_cpp", "dps").solution.source("kernel.cu"),
        "skeleton returning": skeleton(problems["silu_and_mul_llama3_8b"], "cuda_cpp", "returning").solution.source("kernel.cu"),
    }
    _nvcc_compile(sources, tmp_path)
