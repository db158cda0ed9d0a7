"""The keyword rules: category, domain and direction, with the evidence each used."""

from __future__ import annotations

import pytest

from solbench.dataset.catalog.rules import category_of, direction_of, domain_of


@pytest.mark.parametrize("op_type, expected", [
    ("gemm", "gemm"), ("fp8_gemm", "gemm"), ("gemm_fp8", "gemm"), ("linear_backward", "gemm"), ("batched_matmul", "gemm"),
    ("fp8_moe", "moe"), ("moe_router", "moe"), ("moe_align", "moe"),
    ("paged_attention_decode", "attention"), ("mla_prefill", "attention"), ("merge_state", "attention"), ("kv_cache_write", "attention"),
    ("linear_attention", "ssm"), ("ssm_scan_backward", "ssm"),
    ("qk_norm_rope", "rope"), ("rmsnorm", "norm"), ("fused_add_rmsnorm_backward", "norm"), ("rmsnorm_linear", "norm"), ("group_norm", "norm"),
    ("gated_mlp", "mlp"), ("conv2d", "conv"), ("fft_conv", "conv"), ("embedding_backward", "embedding"),
    ("sampling", "sampling"), ("softmax", "reduction"), ("cross_entropy", "reduction"),
    ("silu_and_mul", "elementwise"), ("gelu", "elementwise"),
    ("fp8_quant", "quant"), ("rmsnorm_fp8_quant", "quant"), ("fp4_dequant", "quant"),
])
def test_category_from_op_type(op_type: str, expected: str) -> None:
    assert category_of(op_type, "whatever", None) == (expected, "op_type")


def test_category_falls_back_to_name_then_graph() -> None:
    assert category_of(None, "my_rmsnorm_kernel", None) == ("norm", "name")
    assert category_of("custom_thing", "blob", ["_to_copy", "mm", "add"]) == ("gemm", "graph")
    assert category_of(None, "blob", ["add", "mul"]) == ("elementwise", "graph")
    assert category_of(None, "blob", ["convolution", "mm"]) == ("conv", "graph")
    assert category_of(None, "blob", None) == ("other", "none")


@pytest.mark.parametrize("hf_id, expected", [
    ("meta-llama/Meta-Llama-3-8B", "llm"), ("google/vit-large-patch16-224", "vision"), ("openai/whisper-large-v3", "audio"),
    ("stabilityai/sd-vae-ft-mse", "diffusion"), ("state-spaces/mamba-2.8b-hf", "ssm"), ("fla-hub/gla-1.3B-100B", "ssm"),
    ("openai/clip-vit-large-patch14", "multimodal"), ("google-bert/bert-large-uncased", "llm"), ("deepseek-ai/DeepSeek-V3", "llm"),
])
def test_domain_from_hf_id(hf_id: str, expected: str) -> None:
    assert domain_of(hf_id, "x", "") == (expected, "hf_id")


def test_domain_from_name_or_description_else_unknown() -> None:
    assert domain_of(None, "rmsnorm_llama3_8b", "") == ("llm", "name")
    assert domain_of(None, "blob", "Softmax of ViT attention scores") == ("vision", "description")
    assert domain_of(None, "blob", "a kernel") == ("unknown", "none")


def test_direction() -> None:
    assert direction_of("layernorm_backward_gpt2", None, [], "", ["y"], None) == ("backward", "name")
    assert direction_of("x", "attention_bwd", [], "", ["y"], None) == ("backward", "op_type")
    assert direction_of("x", None, ["grad"], "", ["y"], None) == ("backward", "tags")
    assert direction_of("x", None, [], "Backward of a gated MLP", ["y"], None) == ("backward", "description")
    assert direction_of("x", None, [], "", ["grad_x", "dw"], None) == ("backward", "outputs")
    assert direction_of("x", None, [], "", ["y"], ["mm", "native_layer_norm_backward"]) == ("backward", "graph")
    assert direction_of("gradient_clip", None, [], "clips the gradient norm", ["y"], ["mul"]) == ("forward", "default")
    assert direction_of("upgrade", None, [], "", ["y", "dx"], None) == ("forward", "default")  # not every output is a gradient
