"""Rotary embeddings: from cos/sin inputs, from cached tables gathered by positions, computed from
positions in the reference, fused with q/k norms, the qkv projection or a KV-cache write; backward."""

from __future__ import annotations

from solbench.dataset.synthetic.core import BATCH, SEQ, SHORT, TOKENS, VAR, Spec, autograd_backward, custom, model_spec, out, scalar, t
from solbench.dataset.synthetic.models import DEEPSEEK_V3, LLAMA3_70B, LLAMA3_8B, QWEN2_7B, QWEN3_MOE, Model
from solbench.dataset.synthetic.snippets import ROTATE_HALF

TOKEN_GRID = {"num_tokens": TOKENS + [16384]}
SMALL_TOKENS = {"num_tokens": 32}
Q = ["num_tokens", "num_qo_heads", "head_dim"]
K = ["num_tokens", "num_kv_heads", "head_dim"]

MAKE_POSITIONS = """
def make_positions(axes, device):
    return {"positions": torch.randint(0, axes["max_position"], (axes["num_tokens"],), device=device)}
"""

APPLY_ROPE = """
def apply_rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin
"""


INTERLEAVED_ROTATE = """
def rotate(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
"""

HALVES_ROTATE = """
def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
"""

# Llama-3.1 frequency scaling (factor 8, low/high frequency factors 1 and 4, original context 8192)
LLAMA31_SCALING = (
    "    wavelen = 2 * math.pi / inv_freq\n"
    "    smooth = (8192 / wavelen - 1.0) / (4.0 - 1.0)\n"
    "    mixed = (1 - smooth) * inv_freq / 8.0 + smooth * inv_freq\n"
    "    inv_freq = torch.where(wavelen > 8192, inv_freq / 8.0, torch.where(wavelen < 2048, inv_freq, mixed))\n"
)


def _heads(model: Model) -> dict:
    return {"num_qo_heads": model.heads, "num_kv_heads": model.kv_heads, "head_dim": model.head_dim}


def rope_cos_sin(model: Model, layout: str, dtype: str = "bfloat16") -> Spec:
    """layout 'bshd': [batch, seq, heads, dim] with cos [batch, seq, dim]; 'thd': flat tokens with cos [tokens, 1, dim]."""
    if layout == "bshd":
        qs, ks = ["batch_size", "seq_len", "num_qo_heads", "head_dim"], ["batch_size", "seq_len", "num_kv_heads", "head_dim"]
        cs = ["batch_size", "seq_len", "head_dim"]
        body = "    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)\n"
        axes, grid, small = {"batch_size": VAR, "seq_len": VAR}, {"batch_size": BATCH[:5], "seq_len": SEQ}, {"batch_size": 1, "seq_len": 32}
    else:
        qs, ks, cs, body = Q, K, ["num_tokens", 1, "head_dim"], ""
        axes, grid, small = {"num_tokens": VAR}, TOKEN_GRID, SMALL_TOKENS
    reference = (
        "import torch\n\n\ndef run(q, k, cos, sin):\n" + body
        + "    return apply_rope(q, cos, sin), apply_rope(k, cos, sin)\n"
    )
    return model_spec(
        model, f"rope_cos_sin_{SHORT[dtype]}_{model.key}_{layout}", "rope",
        f"Rotary embedding of {model.key} (rotate-half convention) applied to q and k from precomputed cos/sin.",
        {**axes, **_heads(model)},
        [t("q", qs, dtype), t("k", ks, dtype), t("cos", cs, dtype), t("sin", cs, dtype)],
        [out("q_embed", qs, dtype), out("k_embed", ks, dtype)],
        reference, ROTATE_HALF, APPLY_ROPE,
        grid=grid,
        small=small,
    )


def rope_cached(model: Model) -> Spec:
    return model_spec(
        model, f"rope_cached_positions_bf16_{model.key}", "rope",
        f"Rotary embedding of {model.key}: cos/sin rows of fp32 caches gathered at each token's position.",
        {"num_tokens": VAR, "max_position": VAR, **_heads(model)},
        [t("q", Q, "bfloat16"), t("k", K, "bfloat16"),
         t("cos_cached", ["max_position", "head_dim"], "float32"), t("sin_cached", ["max_position", "head_dim"], "float32"),
         custom("positions", ["num_tokens"], "int64", "position of each token, < max_position")],
        [out("q_out", Q, "bfloat16"), out("k_out", K, "bfloat16")],
        """
            import torch


            def run(q, k, cos_cached, sin_cached, positions):
                cos = cos_cached[positions][:, None, :]
                sin = sin_cached[positions][:, None, :]
                q_out = apply_rope(q.to(torch.float32), cos, sin).to(q.dtype)
                k_out = apply_rope(k.to(torch.float32), cos, sin).to(k.dtype)
                return q_out, k_out
        """, ROTATE_HALF, APPLY_ROPE, MAKE_POSITIONS,
        grid={**TOKEN_GRID, "max_position": [model.max_pos]},
        small={**SMALL_TOKENS, "max_position": 2048},
        custom="make_positions",
    )


def rope_from_positions(model: Model, interleaved: bool, scaled: bool = False) -> Spec:
    rope_dim = model.extra.get("rope_dim", model.head_dim)
    rotate = INTERLEAVED_ROTATE if interleaved else HALVES_ROTATE
    reference = (
        ("import math\n\n" if scaled else "") + "import torch\n\n\n"
        "def run(q, k, positions, rope_theta):\n"
        "    dim = q.shape[-1]\n"
        "    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float32, device=q.device) / dim))\n"
        + (LLAMA31_SCALING if scaled else "")
        + "    freqs = positions.to(torch.float32)[:, None] * inv_freq[None, :]\n"
        "    cos, sin = freqs.cos()[:, None, :], freqs.sin()[:, None, :]\n"
        "    q_out = rotate(q.to(torch.float32), cos, sin).to(q.dtype)\n"
        "    k_out = rotate(k.to(torch.float32), cos, sin).to(k.dtype)\n"
        "    return q_out, k_out\n"
    )
    heads = {"num_qo_heads": model.heads, "num_kv_heads": model.kv_heads if not interleaved else 1, "head_dim": rope_dim}
    tag = "interleaved" if interleaved else ("llama31_scaled" if scaled else "neox")
    return model_spec(
        model, f"rope_positions_{tag}_bf16_{model.key}", "rope",
        f"Rotary embedding of {model.key} with cos/sin computed in the reference from the token positions and "
        f"rope_theta ({'interleaved pairs' if interleaved else 'split halves'}"
        + ("; Llama-3.1 frequency scaling" if scaled else "") + ").",
        {"num_tokens": VAR, "max_position": model.max_pos, **heads},
        [t("q", Q, "bfloat16"), t("k", K, "bfloat16"),
         custom("positions", ["num_tokens"], "int64", "position of each token, < max_position"),
         scalar("rope_theta", model.theta)],
        [out("q_rot", Q, "bfloat16"), out("k_rot", K, "bfloat16")],
        reference, rotate, MAKE_POSITIONS,
        grid=TOKEN_GRID,
        small=SMALL_TOKENS,
        custom="make_positions",
    )


def rope_backward(model: Model, dtype: str = "bfloat16") -> Spec:
    return model_spec(
        model, f"rope_backward_{SHORT[dtype]}_{model.key}", "rope_backward",
        f"Backward of {model.key}'s rotate-half rotary embedding: the gradient is rotated by the transposed rotation.",
        {"num_tokens": VAR, **_heads(model)},
        [t("grad_q_embed", Q, dtype), t("grad_k_embed", K, dtype),
         t("cos", ["num_tokens", "head_dim"], dtype), t("sin", ["num_tokens", "head_dim"], dtype)],
        [out("grad_q", Q, dtype), out("grad_k", K, dtype)],
        """
            import torch


            def rotate_half_transposed(x):
                x1, x2 = x.chunk(2, dim=-1)
                return torch.cat((x2, -x1), dim=-1)


            def run(grad_q_embed, grad_k_embed, cos, sin):
                cos, sin = cos[:, None, :], sin[:, None, :]
                grad_q = grad_q_embed * cos + rotate_half_transposed(grad_q_embed * sin)
                grad_k = grad_k_embed * cos + rotate_half_transposed(grad_k_embed * sin)
                return grad_q, grad_k
        """,
        grid=TOKEN_GRID,
        small=SMALL_TOKENS,
    )


QK_NORM_ROPE = """
def qk_norm_rope(q, k, q_norm_weight, k_norm_weight, cos, sin, eps):
    def norm(x, w):
        x32 = x.to(torch.float32)
        return w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)

    cos, sin = cos[:, None, :], sin[:, None, :]
    return apply_rope(norm(q, q_norm_weight), cos, sin), apply_rope(norm(k, k_norm_weight), cos, sin)
"""


def qk_norm_rope(model: Model) -> Spec:
    return model_spec(
        model, f"qk_norm_rope_bf16_{model.key}", "qk_norm_rope",
        f"Per-head RMSNorm of q and k (Qwen3's q_norm/k_norm) followed by the rotary embedding, {model.key}.",
        {"num_tokens": VAR, **_heads(model)},
        [t("q", Q, "bfloat16"), t("k", K, "bfloat16"), t("q_norm_weight", ["head_dim"], "bfloat16"),
         t("k_norm_weight", ["head_dim"], "bfloat16"), t("cos", ["num_tokens", "head_dim"], "bfloat16"),
         t("sin", ["num_tokens", "head_dim"], "bfloat16"), scalar("eps", model.eps)],
        [out("q_out", Q, "bfloat16"), out("k_out", K, "bfloat16")],
        """
        import torch


        def run(q, k, q_norm_weight, k_norm_weight, cos, sin, eps):
            return qk_norm_rope(q, k, q_norm_weight, k_norm_weight, cos, sin, eps)
        """, ROTATE_HALF, APPLY_ROPE, QK_NORM_ROPE,
        grid={"num_tokens": TOKENS}, small=SMALL_TOKENS,
    )


def qk_norm_rope_backward(model: Model) -> Spec:
    return autograd_backward(qk_norm_rope(model), ["q", "k", "q_norm_weight", "k_norm_weight"],
                             {"q_out": "grad_q_out", "k_out": "grad_k_out"})


def qkv_rope(model: Model) -> Spec:
    shards = [(model.heads // tp, model.kv_heads // tp) for tp in (1, 2, 4, 8) if model.kv_heads % tp == 0]
    return model_spec(
        model, f"qkv_proj_rope_bf16_{model.key}", "qkv_rope",
        f"Fused qkv projection of one tensor-parallel rank of {model.key}, split into q, k, v, with the rotary "
        "embedding applied to q and k.",
        {"num_tokens": VAR, "hidden_size": VAR, "num_qo_heads": VAR, "num_kv_heads": VAR, "head_dim": model.head_dim,
              "qkv_dim": "(num_qo_heads + 2 * num_kv_heads) * head_dim"},
        [t("hidden_states", ["num_tokens", "hidden_size"], "bfloat16"), t("qkv_proj", ["qkv_dim", "hidden_size"], "bfloat16"),
         t("cos", ["num_tokens", "head_dim"], "bfloat16"), t("sin", ["num_tokens", "head_dim"], "bfloat16")],
        [out("q", Q, "bfloat16"), out("k", K, "bfloat16"), out("v", K, "bfloat16")],
        f"""
            import torch

            QUERIES_PER_KV_HEAD = {model.heads // model.kv_heads}


            def run(hidden_states, qkv_proj, cos, sin):
                num_tokens, head_dim = cos.shape
                qkv = (hidden_states @ qkv_proj.T).view(num_tokens, -1, head_dim)
                num_kv_heads = qkv.shape[1] // (QUERIES_PER_KV_HEAD + 2)
                q, k, v = qkv.split([qkv.shape[1] - 2 * num_kv_heads, num_kv_heads, num_kv_heads], dim=1)
                cos, sin = cos[:, None, :], sin[:, None, :]
                return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v
        """, ROTATE_HALF, APPLY_ROPE,
        constraints=["num_qo_heads % num_kv_heads == 0"],
        grid={"num_tokens": TOKENS, "hidden_size": [model.hidden], ("num_qo_heads", "num_kv_heads"): shards},
        small={"num_tokens": 16, "hidden_size": 1024, "num_qo_heads": shards[-1][0], "num_kv_heads": shards[-1][1]},
    )


def rope_kv_cache_write(model: Model) -> Spec:
    kv = ["num_tokens", "num_kv_heads", "head_dim"]
    cache = ["num_slots", "num_kv_heads", "head_dim"]
    return model_spec(
        model, f"rope_kv_cache_write_bf16_{model.key}", "kv_cache_write",
        f"New keys of {model.key} get the rotary embedding at their positions; keys and values are then written "
        "into the slot-indexed KV cache with index_copy_ (each token its own slot).",
        {"num_tokens": VAR, "num_slots": VAR, "max_position": model.max_pos, "num_kv_heads": model.kv_heads, "head_dim": model.head_dim},
        [t("k", kv, "bfloat16"), t("v", kv, "bfloat16"), t("cos_cached", ["max_position", "head_dim"], "bfloat16"),
         t("sin_cached", ["max_position", "head_dim"], "bfloat16"),
         custom("positions", ["num_tokens"], "int64"), custom("slot_mapping", ["num_tokens"], "int64", "distinct cache slots"),
         t("k_cache", cache, "bfloat16"), t("v_cache", cache, "bfloat16")],
        [out("k_cache_out", cache, "bfloat16"), out("v_cache_out", cache, "bfloat16")],
        """
            import torch


            def run(k, v, cos_cached, sin_cached, positions, slot_mapping, k_cache, v_cache):
                cos, sin = cos_cached[positions][:, None, :], sin_cached[positions][:, None, :]
                k_cache = k_cache.clone().index_copy_(0, slot_mapping, apply_rope(k, cos, sin))
                v_cache = v_cache.clone().index_copy_(0, slot_mapping, v)
                return k_cache, v_cache


            def make_inputs(axes, device):
                return {
                    "positions": torch.randint(0, axes["max_position"], (axes["num_tokens"],), device=device),
                    "slot_mapping": torch.randperm(axes["num_slots"])[: axes["num_tokens"]].to(device),
                }
        """, ROTATE_HALF, APPLY_ROPE,
        constraints=["num_tokens <= num_slots"],
        grid={"num_tokens": TOKENS, "num_slots": [16384, 65536, 262144]},
        small={"num_tokens": 16, "num_slots": 256},
        custom="make_inputs",
        valid=lambda axes: axes["num_tokens"] <= axes["num_slots"],
    )


def rope_cos_sin_cache(model: Model) -> Spec:
    """flashinfer's apply_rope_with_cos_sin_cache: one cache [max_position, rotary_dim] holding cos | sin."""
    return model_spec(
        model, f"apply_rope_cos_sin_cache_bf16_{model.key}", "rope",
        f"Rotary embedding of {model.key} from one fp32 cache whose rows hold cos then sin (NeoX halves), "
        "gathered at the given positions; q and k are flattened [num_tokens, heads * head_dim].",
        {"num_tokens": VAR, "max_position": VAR, "num_qo_heads": model.heads, "num_kv_heads": model.kv_heads,
              "head_dim": model.head_dim, "q_dim": "num_qo_heads * head_dim", "k_dim": "num_kv_heads * head_dim"},
        [custom("positions", ["num_tokens"], "int64"), t("query", ["num_tokens", "q_dim"], "bfloat16"),
         t("key", ["num_tokens", "k_dim"], "bfloat16"), t("cos_sin_cache", ["max_position", "head_dim"], "float32")],
        [out("query_out", ["num_tokens", "q_dim"], "bfloat16"), out("key_out", ["num_tokens", "k_dim"], "bfloat16")],
        """
            import torch


            def rotate(x, cos, sin):
                num_tokens, dim = x.shape
                head_dim = cos.shape[-1] * 2
                x = x.view(num_tokens, dim // head_dim, head_dim).to(torch.float32)
                x1, x2 = x.chunk(2, dim=-1)
                y = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
                return y.view(num_tokens, dim)


            def run(positions, query, key, cos_sin_cache):
                cos, sin = cos_sin_cache[positions].chunk(2, dim=-1)
                cos, sin = cos[:, None, :], sin[:, None, :]
                return rotate(query, cos, sin).to(query.dtype), rotate(key, cos, sin).to(key.dtype)
        """, MAKE_POSITIONS,
        grid={**TOKEN_GRID, "max_position": [model.max_pos]},
        small={**SMALL_TOKENS, "max_position": 1024},
        custom="make_positions",
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L1": [
            rope_cos_sin(LLAMA3_8B, "bshd"),
            rope_cos_sin(QWEN2_7B, "thd", "float32"),
            rope_cached(LLAMA3_70B),
            rope_from_positions(DEEPSEEK_V3, interleaved=True),
            rope_backward(LLAMA3_8B, "float32"),
        ],
        "L2": [
            qk_norm_rope(QWEN3_MOE),
            qk_norm_rope_backward(QWEN3_MOE),
            qkv_rope(LLAMA3_8B),
            autograd_backward(qkv_rope(QWEN2_7B), ["hidden_states", "qkv_proj"], {"q": "grad_q", "k": "grad_k", "v": "grad_v"}),
            qkv_rope(QWEN3_MOE),
            rope_kv_cache_write(LLAMA3_8B),
        ],
        "FlashInfer-Bench": [
            rope_cos_sin_cache(LLAMA3_8B),
            rope_from_positions(LLAMA3_8B, interleaved=False, scaled=True),
        ],
    }
