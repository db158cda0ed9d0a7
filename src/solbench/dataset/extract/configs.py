"""Model configs typed in from the published config.json of each model (the Hugging Face id is the
provenance): only the values the extracted layers read. `tiny` is a shrunk config of the same
family (same structure, tiny sizes) for the CPU numerics tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ModelConfig:
    name: str  # problem-name prefix, e.g. "llama3_8b"
    title: str  # e.g. "Llama-3-8B"
    hf_id: str
    family: str  # a key of solbench.dataset.extract.modules.FAMILIES
    values: dict[str, Any]  # keyword arguments of the family's transformers config class
    dtype: str = "bfloat16"  # the dtype the model runs in
    tiny: dict[str, Any] = field(default_factory=dict)  # overrides of `values` for the shrunk config


_LLAMA_TINY = {"hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}

MODELS: dict[str, ModelConfig] = {m.name: m for m in [
    ModelConfig("llama3_8b", "Llama-3-8B", "meta-llama/Meta-Llama-3-8B", "llama", {
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "max_position_embeddings": 8192, "vocab_size": 128256, "attention_bias": False, "mlp_bias": False,
    }, tiny=_LLAMA_TINY),
    ModelConfig("llama3_70b", "Llama-3-70B", "meta-llama/Meta-Llama-3-70B", "llama", {
        "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80, "num_attention_heads": 64,
        "num_key_value_heads": 8, "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "max_position_embeddings": 8192, "vocab_size": 128256, "attention_bias": False, "mlp_bias": False,
    }, tiny=_LLAMA_TINY),
    ModelConfig("qwen3_8b", "Qwen3-8B", "Qwen/Qwen3-8B", "qwen3", {
        "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "max_position_embeddings": 40960, "vocab_size": 151936, "attention_bias": False, "use_sliding_window": False,
    }, tiny=_LLAMA_TINY),
    ModelConfig("qwen3_30b_a3b", "Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", "qwen3_moe", {
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
        "num_experts_per_tok": 8, "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "hidden_act": "silu",
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 40960, "vocab_size": 151936,
        "attention_bias": False, "use_sliding_window": False,
    }, tiny={**_LLAMA_TINY, "moe_intermediate_size": 32, "num_experts": 8, "num_experts_per_tok": 2}),
    ModelConfig("qwen3_235b_a22b", "Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", "qwen3_moe", {
        "hidden_size": 4096, "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_experts": 128,
        "num_experts_per_tok": 8, "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "hidden_act": "silu",
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 40960, "vocab_size": 151936,
        "attention_bias": False, "use_sliding_window": False,
    }, tiny={**_LLAMA_TINY, "moe_intermediate_size": 32, "num_experts": 8, "num_experts_per_tok": 2}),
    ModelConfig("mixtral_8x22b", "Mixtral-8x22B", "mistralai/Mixtral-8x22B-v0.1", "mixtral", {
        "hidden_size": 6144, "intermediate_size": 16384, "num_hidden_layers": 56, "num_attention_heads": 48,
        "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2, "hidden_act": "silu",
        "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "max_position_embeddings": 65536, "vocab_size": 32768,
        "sliding_window": None,
    }, tiny={**_LLAMA_TINY, "num_local_experts": 8, "num_experts_per_tok": 2}),
    ModelConfig("mixtral_8x7b", "Mixtral-8x7B", "mistralai/Mixtral-8x7B-v0.1", "mixtral", {
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2, "hidden_act": "silu",
        "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "max_position_embeddings": 32768, "vocab_size": 32000,
        "sliding_window": None,
    }, tiny={**_LLAMA_TINY, "num_local_experts": 8, "num_experts_per_tok": 2}),
    ModelConfig("deepseek_v3", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3", "deepseek_v3", {
        "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256,
        "n_shared_experts": 1, "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4, "routed_scaling_factor": 2.5,
        "norm_topk_prob": True, "first_k_dense_replace": 3, "num_hidden_layers": 61, "num_attention_heads": 128,
        "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "rope_scaling": {"type": "yarn", "factor": 40.0, "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096},
        "max_position_embeddings": 163840, "vocab_size": 129280, "attention_bias": False,
    }, tiny={"hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 16,
             "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1, "num_attention_heads": 4, "num_key_value_heads": 4,
             "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16}),
    ModelConfig("gemma2_27b", "Gemma-2-27B", "google/gemma-2-27b", "gemma2", {
        "hidden_size": 4608, "intermediate_size": 36864, "num_hidden_layers": 46, "num_attention_heads": 32,
        "num_key_value_heads": 16, "head_dim": 128, "query_pre_attn_scalar": 144, "sliding_window": 4096,
        "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "max_position_embeddings": 8192,
        "vocab_size": 256000, "attention_bias": False,
    }, tiny={**_LLAMA_TINY, "query_pre_attn_scalar": 16, "sliding_window": 8}),
    ModelConfig("gemma3_27b", "Gemma-3-27B", "google/gemma-3-27b-it", "gemma3", {
        "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 62, "num_attention_heads": 32,
        "num_key_value_heads": 16, "head_dim": 128, "query_pre_attn_scalar": 168, "sliding_window": 1024,
        "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        "attn_logit_softcapping": None, "final_logit_softcapping": None, "max_position_embeddings": 131072,
        "vocab_size": 262208, "attention_bias": False,
    }, tiny={**_LLAMA_TINY, "query_pre_attn_scalar": 16, "sliding_window": 8}),
    ModelConfig("vit_large", "ViT-Large", "google/vit-large-patch16-224", "vit", {
        "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
        "hidden_act": "gelu", "layer_norm_eps": 1e-12, "image_size": 224, "patch_size": 16, "qkv_bias": True,
    }, dtype="float32", tiny={"hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4}),
    ModelConfig("whisper_large_v3", "Whisper-large-v3", "openai/whisper-large-v3", "whisper", {
        "d_model": 1280, "encoder_layers": 32, "decoder_layers": 32, "encoder_attention_heads": 20,
        "decoder_attention_heads": 20, "encoder_ffn_dim": 5120, "decoder_ffn_dim": 5120, "num_mel_bins": 128,
        "max_source_positions": 1500, "max_target_positions": 448, "vocab_size": 51866, "activation_function": "gelu",
    }, dtype="float16", tiny={"d_model": 64, "encoder_attention_heads": 4, "decoder_attention_heads": 4, "max_source_positions": 30}),
    ModelConfig("mamba_codestral_7b", "Mamba-Codestral-7B", "mistralai/Mamba-Codestral-7B-v0.1", "mamba2", {
        "hidden_size": 4096, "num_heads": 128, "head_dim": 64, "state_size": 128, "n_groups": 8, "expand": 2,
        "conv_kernel": 4, "chunk_size": 256, "num_hidden_layers": 64, "vocab_size": 32768, "use_bias": False,
        "use_conv_bias": True, "layer_norm_epsilon": 1e-5, "time_step_limit": (0.0, float("inf")),
    }, tiny={"hidden_size": 64, "num_heads": 8, "head_dim": 16, "state_size": 16, "n_groups": 2, "chunk_size": 4}),
    ModelConfig("convnext_large", "ConvNeXt-Large", "facebook/convnext-large-224", "convnext", {
        "hidden_sizes": [192, 384, 768, 1536], "depths": [3, 3, 27, 3], "hidden_act": "gelu", "layer_norm_eps": 1e-12,
        "layer_scale_init_value": 1e-6, "drop_path_rate": 0.0, "num_channels": 3, "patch_size": 4, "image_size": 224,
    }, dtype="float32", tiny={"hidden_sizes": [8, 16, 32, 64]}),
    ModelConfig("resnet50", "ResNet-50", "microsoft/resnet-50", "resnet", {
        "embedding_size": 64, "hidden_sizes": [256, 512, 1024, 2048], "depths": [3, 4, 6, 3], "layer_type": "bottleneck",
        "hidden_act": "relu", "downsample_in_first_stage": False, "downsample_in_bottleneck": False, "num_channels": 3,
    }, dtype="float32", tiny={"hidden_sizes": [16, 32, 64, 128]}),
    ModelConfig("chameleon_vqgan", "Chameleon-7B VQGAN", "facebook/chameleon-7b", "chameleon", {
        "embed_dim": 256, "num_embeddings": 8192, "latent_channels": 256, "resolution": 512, "in_channels": 3,
        "base_channels": 128, "channel_multiplier": [1, 1, 2, 2, 4], "num_res_blocks": 2, "dropout": 0.0,
    }, dtype="float32", tiny={"base_channels": 32}),
    # The Token2Wav DiT's values are the defaults of transformers' Qwen2_5OmniDiTConfig, which are the published model's
    # token2wav_config.dit_config (block_size 24: the class's docstring says 64, its default and the model's code use 24).
    # dtype: transformers runs the token2wav in fp32 whatever the checkpoint's dtype (Qwen2_5OmniForConditionalGeneration
    # calls token2wav.float(); "Qwen2_5OmniToken2WavModel must inference with fp32").
    ModelConfig("qwen2_5_omni_dit", "Qwen2.5-Omni-7B Token2Wav DiT", "Qwen/Qwen2.5-Omni-7B", "qwen2_5_omni_dit", {
        "hidden_size": 1024, "num_hidden_layers": 22, "num_attention_heads": 16, "head_dim": 64, "ff_mult": 2,
        "block_size": 24, "look_ahead_layers": [10], "look_backward_layers": [0, 20], "dropout": 0.1,
        "max_position_embeddings": 32768, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "repeats": 2, "mel_dim": 80,
    }, dtype="float32", tiny={"hidden_size": 64, "num_attention_heads": 4, "head_dim": 16, "block_size": 4}),
]}
