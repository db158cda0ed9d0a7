"""`solbench dataset extract` end to end on full-size configs: files load, validate, price with no uncovered op,
are byte-identical on a second run; bad input is one line and a non-zero exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from solbench.cli import app  # noqa: E402
from solbench.data.loaders import load_problems  # noqa: E402
from solbench.data.reference import reference_module  # noqa: E402

runner = CliRunner()
LLAMA = ["llama3_8b_attention", "llama3_8b_norm", "llama3_8b_rope", "llama3_8b_mlp", "llama3_8b_norm_backward"]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("extract")
    result = runner.invoke(app, ["dataset", "extract", "llama3_8b", "--modules", "attention,norm,rope,mlp", "-o", str(out)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["dataset", "extract", "llama3_8b", "--modules", "norm", "--backward", "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["dataset", "extract", "qwen3_30b_a3b", "--modules", "moe", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_problems_load_with_typed_axes(extracted):
    problems = {p.name: p for p in load_problems([extracted])}
    assert set(LLAMA) | {"qwen3_30b_a3b_moe"} <= set(problems)
    mlp = problems["llama3_8b_mlp"].definition
    assert mlp.hf_id == "meta-llama/Meta-Llama-3-8B" and mlp.op_type == "mlp"
    assert mlp.axes["hidden_size"].value == 4096 and mlp.axes["intermediate_size"].value == 14336
    assert mlp.axes["batch_size"].type == "var" and mlp.axes["seq_len"].type == "var"
    assert mlp.inputs["gate_proj_weight"].shape == ["intermediate_size", "hidden_size"]
    assert mlp.inputs["hidden_states"].dtype.value == "bfloat16"
    attention = problems["llama3_8b_attention"].definition
    assert attention.inputs["k_proj_weight"].shape == ["kv_dim", "hidden_size"]
    assert attention.axes["kv_dim"].expression == "num_kv_heads * head_dim"
    for problem in problems.values():
        assert 6 <= len(problem.workloads) <= 10
        sizes = [(w.axes["batch_size"], w.axes["seq_len"]) for w in problem.workloads]
        assert sizes[0] == (1, 128) and all(1 <= b <= 64 and 128 <= s <= 8192 for b, s in sizes)


def test_validate_passes(extracted):
    result = runner.invoke(app, ["validate", str(extracted)])
    assert result.exit_code == 0, result.output
    assert "did not run" not in result.output and "degenerate:" not in result.output


def test_sol_reports_no_uncovered_op(extracted):
    names = [n for n in LLAMA]
    for name in names:
        result = runner.invoke(app, ["sol", str(extracted / name), "--json", "-j", "1"])
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
        assert len(rows) == len(load_problems([extracted / name])[0].workloads)
        assert all(row["uncovered_ops"] == [] for row in rows), (name, {op for row in rows for op in row["uncovered_ops"]})


def test_sol_prices_moe(extracted):
    result = runner.invoke(app, ["sol", str(extracted / "qwen3_30b_a3b_moe"), "--json", "-j", "1"])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert rows and all(row["uncovered_ops"] == [] for row in rows)


@pytest.mark.parametrize("name", ["llama3_8b_norm", "llama3_8b_rope", "qwen3_30b_a3b_moe"])
def test_smallest_workload_runs_on_cpu(extracted, name):
    [problem] = load_problems([extracted / name])
    definition = problem.definition
    workload = problem.workloads[0]
    axes = problem.axes(workload)
    torch.manual_seed(0)
    args = []
    for spec in definition.inputs.values():
        shape = [d if isinstance(d, int) else axes[d] for d in spec.dims]
        if spec.dtype.value == "int64":
            args.append(torch.randint(0, axes["seq_len"], shape))
        else:
            args.append((torch.randn(shape) * 0.02).to(getattr(torch, spec.dtype.value)))
    out = reference_module(definition).run(*args)
    outs = out if isinstance(out, tuple) else (out,)
    for tensor, spec in zip(outs, definition.outputs.values()):
        assert list(tensor.shape) == [d if isinstance(d, int) else axes[d] for d in spec.dims]
        assert torch.isfinite(tensor.float()).all()


def test_extracting_twice_gives_identical_bytes(tmp_path):
    for folder in ("a", "b"):
        result = runner.invoke(app, ["dataset", "extract", "llama3_70b", "--modules", "norm,rope", "--backward", "-o", str(tmp_path / folder)])
        assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 6
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


def test_list_names_models_and_modules():
    result = runner.invoke(app, ["dataset", "extract", "--list"])
    assert result.exit_code == 0
    line = next(l for l in result.output.splitlines() if l.startswith("deepseek_v3"))
    assert "deepseek-ai/DeepSeek-V3" in line and "moe" in line and "attention" in line


@pytest.mark.parametrize("args, expected", [
    (["nosuchmodel"], "unknown model 'nosuchmodel'"),
    (["llama3_8b", "--modules", "mlp,nosuch"], "has no module 'nosuch'"),
])
def test_bad_input_is_one_line(tmp_path, args, expected):
    result = runner.invoke(app, ["dataset", "extract", *args, "-o", str(tmp_path)])
    assert result.exit_code == 1
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and expected in lines[0], result.output


def test_existing_folder_is_refused_without_force(tmp_path):
    (tmp_path / "llama3_8b_norm").mkdir()
    (tmp_path / "llama3_8b_norm" / "definition.json").write_text("mine")
    result = runner.invoke(app, ["dataset", "extract", "llama3_8b", "--modules", "norm", "-o", str(tmp_path)])
    assert result.exit_code == 1
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert len(lines) == 1 and "exists already" in lines[0] and "--force" in lines[0]
    assert (tmp_path / "llama3_8b_norm" / "definition.json").read_text() == "mine"


def test_a_problem_whose_grid_fits_no_workload_is_not_written(tmp_path):
    """Llama-3-70B's fp32 MLP backward needs more memory than a workload may have at every grid point."""
    result = runner.invoke(app, ["dataset", "extract", "llama3_70b", "-m", "mlp", "--dtype", "float32", "--backward", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "llama3_70b_mlp_fp32_backward: not written: no workload of its grid fits" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["llama3_70b_mlp_fp32"]
