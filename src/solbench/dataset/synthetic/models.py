"""Shapes of the real models whose layers the synthetic problems imitate (from their public configs)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Model:
    key: str
    hf_id: str
    hidden: int
    heads: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    inter: int = 0
    vocab: int = 0
    eps: float = 1e-5
    theta: float = 10000.0
    max_pos: int = 8192
    extra: dict = field(default_factory=dict)

    def __getitem__(self, key: str):
        return self.extra[key]

    def projection(self, which: str) -> tuple[int, int]:
        """(N, K) of a projection weight [N, K]."""
        return {
            "qkv": ((self.heads + 2 * self.kv_heads) * self.head_dim, self.hidden),
            "q": (self.heads * self.head_dim, self.hidden),
            "o": (self.hidden, self.heads * self.head_dim),
            "gate_up": (2 * self.inter, self.hidden),
            "fc1": (self.inter, self.hidden),
            "fc2": (self.hidden, self.inter),
            "down": (self.hidden, self.inter),
            "lm_head": (self.vocab, self.hidden),
        }[which]


LLAMA3_8B = Model("llama3_8b", "meta-llama/Meta-Llama-3-8B-Instruct", 4096, 32, 8, 128, 14336, 128256, 1e-5, 500000.0, 8192)
LLAMA3_70B = Model("llama3_70b", "meta-llama/Meta-Llama-3-70B-Instruct", 8192, 64, 8, 128, 28672, 128256, 1e-5, 500000.0, 8192)
QWEN2_7B = Model("qwen2_7b", "Qwen/Qwen2-7B-Instruct", 3584, 28, 4, 128, 18944, 152064, 1e-6, 1000000.0, 32768)
QWEN3_MOE = Model(
    "qwen3_30b_a3b", "Qwen/Qwen3-30B-A3B", 2048, 32, 4, 128, 6144, 151936, 1e-6, 1000000.0, 40960,
    {"experts": 128, "top_k": 8, "moe_inter": 768},
)
MIXTRAL = Model(
    "mixtral_8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1", 4096, 32, 8, 128, 14336, 32000, 1e-5, 1000000.0, 32768,
    {"experts": 8, "top_k": 2, "moe_inter": 14336},
)
DEEPSEEK_V3 = Model(
    "deepseek_v3", "deepseek-ai/DeepSeek-V3", 7168, 128, 128, 128, 18432, 129280, 1e-6, 10000.0, 163840,
    {"experts": 256, "top_k": 8, "moe_inter": 2048, "q_lora": 1536, "kv_lora": 512, "rope_dim": 64, "nope_dim": 128,
     "v_dim": 128, "groups": 8, "topk_groups": 4, "scaling": 2.5},
)
DEEPSEEK_V2_LITE = Model(
    "deepseek_v2_lite", "deepseek-ai/DeepSeek-V2-Lite-Chat", 2048, 16, 16, 128, 10944, 102400, 1e-6, 10000.0, 163840,
    {"experts": 64, "top_k": 6, "moe_inter": 1408, "kv_lora": 512, "rope_dim": 64, "nope_dim": 128, "v_dim": 128},
)
GEMMA2_9B = Model(
    "gemma2_9b", "google/gemma-2-9b-it", 3584, 16, 8, 256, 14336, 256000, 1e-6, 10000.0, 8192,
    {"softcap": 50.0, "final_softcap": 30.0, "window": 4096},
)
VIT_LARGE = Model("vit_large", "google/vit-large-patch16-224", 1024, 16, 16, 64, 4096, 0, 1e-12)
WHISPER = Model("whisper_large_v3", "openai/whisper-large-v3", 1280, 20, 20, 64, 5120, 51866, 1e-5, max_pos=448)
CLIP_TEXT = Model("clip_vit_l14_text", "openai/clip-vit-large-patch14", 768, 12, 12, 64, 3072, 49408, 1e-5, max_pos=77)
T5_XXL = Model("t5_v1_1_xxl", "google/t5-v1_1-xxl", 4096, 64, 64, 64, 10240, 32128, 1e-6)
BERT_LARGE = Model("bert_large", "google-bert/bert-large-uncased", 1024, 16, 16, 64, 4096, 30522, 1e-12, max_pos=512)
MAMBA_2_8B = Model("mamba_2_8b", "state-spaces/mamba-2.8b-hf", 2560, inter=5120, vocab=50280, extra={"d_state": 16, "d_conv": 4, "dt_rank": 160})
MAMBA2_2_7B = Model(
    "mamba2_2_7b", "state-spaces/mamba2-2.7b", 2560, heads=80, head_dim=64, inter=5120, vocab=50288,
    extra={"d_state": 128, "chunk": 256, "d_conv": 4},
)
MAMBA2_780M = Model(
    "mamba2_780m", "state-spaces/mamba2-780m", 1536, heads=48, head_dim=64, inter=3072, vocab=50288,
    extra={"d_state": 128, "chunk": 256, "d_conv": 4},
)
GLA_1_3B = Model("gla_1_3b", "fla-hub/gla-1.3B-100B", 2048, 4, 4, 512, 5632, 32000)
QWEN3_NEXT = Model("qwen3_next_80b_a3b", "Qwen/Qwen3-Next-80B-A3B-Instruct", 2048, 16, 16, 128, 5120, 151936, 1e-6)
HYENA = Model("striped_hyena_7b", "togethercomputer/StripedHyena-Hessian-7B", 4096, max_pos=32768)
SD_VAE = Model("sd_vae", "stabilityai/sd-vae-ft-mse", 512, extra={"groups": 32})
BLOOM_7B = Model("bloom_7b1", "bigscience/bloom-7b1", 4096, 32, 32, 128, 16384, 250880, 1e-5, max_pos=2048)
