"""Shared real datasets for the catalogue tests: a copy of the bundled problems and a subset of the
synthetic set (generated once per session), each characterised once in this process."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from solbench.dataset import bundled_problems_path
from solbench.dataset.catalog.characterise import characterise, write_index
from solbench.dataset.catalog.row import Index
from solbench.dataset.synthetic import generate_dataset

# A spread of the synthetic set: GEMMs of one shape family (duplicates of each other), norms, rope,
# attention, MoE (data-dependent routing), sampling, fp8 and fp4, a backward, a custom-input problem.
SYNTHETIC_SUBSET = {
    "L1": ["001_gemm_bf16_llama3_8b_qkv", "002_gemm_bf16_llama3_8b_gate_up", "003_gemm_bf16_llama3_8b_down", "053_rmsnorm_bf16_deepseek_v3_q_a_b1",
           "059_rmsnorm_backward_rstd_bf16_llama3_8b", "067_rope_cos_sin_bf16_llama3_8b_bshd", "076_softmax_fp32_vit_large",
           "080_embedding_bf16_llama3_8b", "082_conv2d_3x3_fp32_sd_vae_c256", "093_moe_router_topk_bf16_mixtral_8x7b"],
    "L2": ["130_swiglu_mlp_bf16_llama3_8b", "161_moe_permute_nonzero_fp32_qwen3_30b_a3b", "168_selective_scan_bf16_mamba_2_8b"],
    "Quant": ["179_fp8_gemm_per_tensor_bf16_out_llama3_8b_qkv", "197_nvfp4_gemm_llama3_8b_qkv"],
    "FlashInfer-Bench": ["207_paged_decode_bf16_llama3_8b_ps16", "234_top_k_mask_logits_fp32_llama3_8b", "239_greedy_argmax_bf16_llama3_8b"],
}


@pytest.fixture(scope="session")
def bundled_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("catalog") / "bundled"
    shutil.copytree(bundled_problems_path(), target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture(scope="session")
def bundled_index(bundled_copy: Path) -> Index:
    return characterise(bundled_copy, jobs=1)


@pytest.fixture(scope="session")
def synthetic_subset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    whole = tmp_path_factory.mktemp("catalog") / "synthetic"
    generate_dataset(whole)
    subset = tmp_path_factory.mktemp("catalog") / "pool"
    for folder, names in SYNTHETIC_SUBSET.items():
        for name in names:
            shutil.copytree(whole / folder / name, subset / folder / name)
    return subset


@pytest.fixture(scope="session")
def synthetic_index(synthetic_subset: Path) -> Index:
    index = characterise(synthetic_subset, jobs=1)
    write_index(index, synthetic_subset / "index.json")
    return index
