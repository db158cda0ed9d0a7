"""characterise: the dimensions of known problems, from real SOL analyses of real problem folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from solbench.data.errors import SpecError
from solbench.data.loaders import load_problems
from solbench.dataset.catalog.analyse import characterise_problem, representative
from solbench.dataset.catalog.characterise import characterise, index_for, read_index, write_index
from solbench.sol.hardware import get_hardware



def rows_by_name(index) -> dict:
    return {row.name: row for row in index.problems}


def test_bundled_gemm_is_gemm_llm_bf16_forward(bundled_index, bundled_copy: Path) -> None:
    lines = (bundled_copy / "gemm_bf16_llama3_8b_qkv_proj" / "workload.jsonl").read_text().split("\n")
    row = rows_by_name(bundled_index)["gemm_bf16_llama3_8b_qkv_proj"]
    assert (row.category, row.domain, row.precision, row.direction) == ("gemm", "llm", "bfloat16", "forward")
    assert (row.quantised, row.fp8, row.fp4, row.custom_inputs) == ("none", False, False, False)
    assert row.hf_id == "meta-llama/Meta-Llama-3-8B"
    assert row.ops == ["mm"] and row.distinct_ops == 1 and row.fusion is False and row.data_dependent is False
    assert row.workloads == sum(1 for line in lines if line.strip()) > 1 and row.var_axes == 1
    assert row.sol is not None and row.sol.workload_choice == "median" and row.sol.hardware == "H200"
    assert row.sol.intensity == pytest.approx(row.sol.flops / row.sol.bytes)


def test_bundled_gemm_is_compute_bound_at_its_largest_workload(bundled_copy: Path) -> None:
    problem = next(p for p in load_problems([bundled_copy]) if p.name == "gemm_bf16_llama3_8b_qkv_proj")
    largest = representative(problem, "largest")
    m = problem.axes(largest)["M"]
    row = characterise_problem(problem, bundled_copy, get_hardware("H200"), "largest")
    assert row.sol.workload == largest.uuid
    assert row.sol.flops == pytest.approx(2 * m * 6144 * 4096)  # out = a @ b.T, a [M, 4096], b [6144, 4096]
    assert row.sol.bound == "compute" and row.sol.bottleneck != "memory"
    smallest = characterise_problem(problem, bundled_copy, get_hardware("H200"), "smallest")
    assert smallest.sol.bound == "memory"  # one token: the weight read dominates


def test_bundled_backward_fp8_and_categories(bundled_index) -> None:
    rows = rows_by_name(bundled_index)
    backward = rows["layernorm_backward_gpt2_medium"]
    assert (backward.direction, backward.category, backward.precision) == ("backward", "norm", "float32")
    fp8 = rows["fp8_gemm_llama3_8b_down_proj"]
    assert (fp8.category, fp8.quantised, fp8.fp8, fp8.precision) == ("gemm", "fp8", True, "float8_e4m3fn")
    assert rows["softmax_vit_large_attention"].domain == "vision"
    assert rows["moe_topk_router_mixtral_8x7b"].category == "moe"
    assert rows["gqa_decode_llama3_8b"].category == "attention"
    assert rows["rope_llama3_8b"].category == "rope"
    assert rows["swiglu_mlp_llama3_8b"].category == "mlp" and rows["swiglu_mlp_llama3_8b"].fusion is True
    assert rows["embedding_llama3_8b"].category == "embedding"
    assert sum(row.direction == "backward" for row in bundled_index.problems) == 1
    assert all(row.error is None for row in bundled_index.problems)


def test_synthetic_subset_dimensions(synthetic_index) -> None:
    rows = rows_by_name(synthetic_index)
    assert len(rows) == 18 and all(row.error is None for row in rows.values())
    assert rows["197_nvfp4_gemm_llama3_8b_qkv"].quantised == "fp4"
    assert rows["179_fp8_gemm_per_tensor_bf16_out_llama3_8b_qkv"].quantised == "fp8"
    assert rows["168_selective_scan_bf16_mamba_2_8b"].domain == "ssm" and rows["168_selective_scan_bf16_mamba_2_8b"].category == "ssm"
    assert rows["082_conv2d_3x3_fp32_sd_vae_c256"].domain == "diffusion" and rows["082_conv2d_3x3_fp32_sd_vae_c256"].category == "conv"
    assert rows["234_top_k_mask_logits_fp32_llama3_8b"].category == "sampling"
    assert rows["059_rmsnorm_backward_rstd_bf16_llama3_8b"].direction == "backward"
    assert rows["080_embedding_bf16_llama3_8b"].custom_inputs is True
    assert rows["001_gemm_bf16_llama3_8b_qkv"].custom_inputs is False
    assert rows["161_moe_permute_nonzero_fp32_qwen3_30b_a3b"].data_dependent is True
    assert "nonzero" in rows["161_moe_permute_nonzero_fp32_qwen3_30b_a3b"].data_dependent_ops
    assert rows["001_gemm_bf16_llama3_8b_qkv"].subset == "L1" and rows["001_gemm_bf16_llama3_8b_qkv"].path == "L1/001_gemm_bf16_llama3_8b_qkv"


def _broken_problem(folder: Path) -> None:
    """A valid problem folder whose reference fails when it runs (the analysis must record it)."""
    folder.mkdir(parents=True)
    definition = {"name": "broken_reference", "op_type": "gemm", "description": "raises at run time", "axes": {"n": {"type": "var"}},
                  "inputs": {"x": {"shape": ["n"], "dtype": "float32"}}, "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
                  "reference": "import torch\n\ndef run(x):\n    raise ValueError('no way')\n"}
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text(json.dumps({"uuid": "w-broken-1", "axes": {"n": 8}, "inputs": {"x": {"type": "random"}}}) + "\n")


def test_failed_analysis_is_recorded_and_the_others_go_on(tmp_path: Path, bundled_copy: Path) -> None:
    shutil.copytree(bundled_copy / "rmsnorm_llama3_8b", tmp_path / "set" / "rmsnorm_llama3_8b")
    _broken_problem(tmp_path / "set" / "broken_reference")
    index = characterise(tmp_path / "set", jobs=1)
    rows = rows_by_name(index)
    assert "ValueError" in rows["broken_reference"].error and "no way" in rows["broken_reference"].error
    assert rows["broken_reference"].sol is None and rows["broken_reference"].category == "gemm"  # what the definition says still holds
    assert rows["rmsnorm_llama3_8b"].error is None and rows["rmsnorm_llama3_8b"].sol is not None


def test_index_is_deterministic_reused_and_never_overwrites_a_foreign_file(tmp_path: Path, bundled_copy: Path) -> None:
    folder = tmp_path / "set"
    for name in ("rmsnorm_llama3_8b", "silu_and_mul_llama3_8b"):
        shutil.copytree(bundled_copy / name, folder / name)
    first = characterise(folder, jobs=1)
    write_index(first, tmp_path / "a.json")
    write_index(characterise(folder, jobs=1), tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    write_index(first, tmp_path / "a.json")  # ours: replaced without --force
    (tmp_path / "user.json").write_text('{"mine": 1}\n')
    with pytest.raises(SpecError, match="not an index written by"):
        write_index(first, tmp_path / "user.json")
    assert (tmp_path / "user.json").read_text() == '{"mine": 1}\n'
    write_index(first, tmp_path / "user.json", force=True)
    assert read_index(tmp_path / "user.json") == first

    # index_for: a current index is read as is; a changed problem makes it characterise (only) that one again
    write_index(first, folder / "index.json")
    assert index_for(folder) == first
    definition = folder / "silu_and_mul_llama3_8b" / "definition.json"
    data = json.loads(definition.read_text())
    data["hf_id"] = "openai/whisper-large-v3"
    definition.write_text(json.dumps(data))
    notes: list[str] = []
    updated = index_for(folder, on_note=notes.append)
    assert rows_by_name(updated)["silu_and_mul_llama3_8b"].domain == "audio"
    assert rows_by_name(updated)["rmsnorm_llama3_8b"] == rows_by_name(first)["rmsnorm_llama3_8b"]
    assert any("out of date" in note for note in notes)
    assert read_index(folder / "index.json") == updated


def test_worker_processes_give_the_same_rows(bundled_copy: Path, bundled_index) -> None:
    assert characterise(bundled_copy, jobs=2) == bundled_index
