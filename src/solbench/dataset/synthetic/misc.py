"""Single ops and their backward: activations, softmax, losses (0-d outputs), embeddings, conv2d,
KV-cache writes with index_copy_."""

from __future__ import annotations

from solbench.dataset.synthetic.core import BATCH, SHORT, TOKENS, VAR, Spec, autograd_backward, batch_of_one, custom, model_spec, out, rows_spec, scalar, t, upto
from solbench.dataset.synthetic.models import GEMMA2_9B, LLAMA3_70B, LLAMA3_8B, MIXTRAL, QWEN2_7B, SD_VAE, VIT_LARGE, Model
from solbench.dataset.synthetic.snippets import SILU_AND_MUL

def _activation(name: str, op_type: str, description: str, model: Model, dtype: str, in_dim: str, out_dim: str,
                reference: str, *parts: str, inputs: list | None = None) -> Spec:
    """An element-wise op over [num_tokens, in_dim] -> [num_tokens, out_dim] (dims: intermediate_size or gate_up_size)."""
    gated = "gate_up_size" in (in_dim, out_dim)
    return rows_spec(model, name, op_type, description, inputs or [t("x", ["num_tokens", in_dim], dtype)],
                     [out("out", ["num_tokens", out_dim], dtype)], reference, *parts, width=model.inter,
                     width_axis="intermediate_size", axes={"gate_up_size": "2 * intermediate_size"} if gated else None, small_rows=16)


def silu_and_mul(model: Model, dtype: str = "bfloat16", tag: str = "") -> Spec:
    return _activation(
        f"silu_and_mul_{SHORT[dtype]}_{model.key}{tag}", "silu_and_mul",
        f"SwiGLU activation of {model.key}'s MLP: the fused gate|up projection output split in halves, silu(gate) * up.",
        model, dtype, "gate_up_size", "intermediate_size",
        """
        import torch


        def run(x):
            return silu_and_mul(x)
        """, SILU_AND_MUL,
    )


def gelu_tanh_and_mul(model: Model) -> Spec:
    return _activation(
        f"gelu_tanh_and_mul_bf16_{model.key}", "gelu_and_mul",
        f"GeGLU activation of {model.key}: gelu (tanh approximation) of the gate half times the up half.",
        model, "bfloat16", "gate_up_size", "intermediate_size",
        """
        import torch
        import torch.nn.functional as F


        def run(x):
            gate, up = x.chunk(2, dim=-1)
            return F.gelu(gate, approximate="tanh") * up
        """,
    )


def gelu(model: Model, dtype: str, approximate: str) -> Spec:
    return _activation(
        f"gelu_{approximate}_{SHORT[dtype]}_{model.key}", "gelu",
        f"GELU ({'tanh approximation' if approximate == 'tanh' else 'exact erf'}) of {model.key}'s MLP activations.",
        model, dtype, "intermediate_size", "intermediate_size",
        f"""
        import torch
        import torch.nn.functional as F


        def run(x):
            return F.gelu(x, approximate="{approximate}")
        """,
    )


def silu_and_mul_backward(model: Model, dtype: str = "bfloat16") -> Spec:
    spec = _activation(
        f"silu_and_mul_backward_{SHORT[dtype]}_{model.key}", "silu_and_mul_backward",
        f"Backward of {model.key}'s silu(gate) * up, written out by hand in fp32: the gradient of the fused gate|up input.",
        model, dtype, "gate_up_size", "gate_up_size",
        """
        import torch


        def run(grad_output, x):
            gate, up = x.to(torch.float32).chunk(2, dim=-1)
            g = grad_output.to(torch.float32)
            sig = torch.sigmoid(gate)
            grad_gate = g * up * sig * (1 + gate * (1 - sig))
            grad_up = g * gate * sig
            return torch.cat([grad_gate, grad_up], dim=-1).to(x.dtype)
        """,
        inputs=[t("grad_output", ["num_tokens", "intermediate_size"], dtype), t("x", ["num_tokens", "gate_up_size"], dtype)],
    )
    spec.outputs = [out("grad_x", ["num_tokens", "gate_up_size"], dtype)]
    return spec


def gelu_tanh_backward(model: Model) -> Spec:
    return autograd_backward(gelu(model, "bfloat16", "tanh"), ["x"], {"out": "grad_out"})


ATTN_PROBS = ["batch_size", "num_heads", "seq_len", "seq_len"]


def _normaliser(model: Model, name: str, description: str, axes: dict, shape: list, names: tuple[str, str], forward: str,
                backward: str | None, grid: dict, small: dict, **extra) -> Spec:
    """A row-wise normaliser over the last dim: forward `run(x)` (names = (x, y)), or with `backward`
    the gradient from the saved output y: `run(grad_output, y)`."""
    x, y = names
    if backward:
        inputs = [t("grad_output", shape, "float32"), t(y, shape, "float32", "the forward's output")]
        result, body = f"grad_{x}", f"def run(grad_output, {y}):\n    return {backward}\n"
    else:
        inputs, result, body = [t(x, shape, "float32")], y, f"def run({x}):\n    return {forward}\n"
    op = name + ("_backward" if backward else "")
    return model_spec(model, f"{op}_fp32_{model.key}", op, description + (": backward from the saved output." if backward else "."),
                      axes, inputs, [out(result, shape, "float32")], "import torch\n\n\n" + body, grid=grid, small=small, **extra)


def softmax(model: Model, backward: bool) -> Spec:
    return _normaliser(
        model, "softmax", f"Softmax over the keys of {model.key}'s attention scores",
        {"batch_size": VAR, "num_heads": model.heads, "seq_len": VAR}, ATTN_PROBS, ("scores", "attn_weights"),
        "torch.softmax(scores, dim=-1)",
        "attn_weights * (grad_output - (grad_output * attn_weights).sum(dim=-1, keepdim=True))" if backward else None,
        grid={"batch_size": BATCH, "seq_len": [197, 257, 577, 1024]}, small={"batch_size": 1, "seq_len": 64},
    )


LOGITS = ["num_tokens", "vocab_size"]


def log_softmax(model: Model, backward: bool) -> Spec:
    return _normaliser(
        model, "log_softmax", f"log-softmax over {model.key}'s vocabulary ({model.vocab})",
        {"num_tokens": VAR, "vocab_size": model.vocab}, LOGITS, ("logits", "log_probs"), "torch.log_softmax(logits, dim=-1)",
        "grad_output - torch.exp(log_probs) * grad_output.sum(dim=-1, keepdim=True)" if backward else None,
        grid={"num_tokens": upto(TOKENS, 2048)}, small={"num_tokens": 4}, neg_inf=not backward,
    )


MAKE_LABELS = """
def make_labels(axes, device):
    labels = torch.randint(0, axes["vocab_size"], (axes["num_tokens"],))
    ignored = torch.rand(axes["num_tokens"]) < 0.05
    ignored[0] = False  # at least one token counts, so the mean is defined
    return {"labels": labels.masked_fill(ignored, -100).to(device)}
"""

LABELS = custom("labels", ["num_tokens"], "int64", "target token ids in [0, vocab_size); -100 is ignored")


def cross_entropy(model: Model) -> Spec:
    return rows_spec(
        model, f"cross_entropy_fp32_{model.key}", "cross_entropy",
        f"Mean token cross-entropy over {model.key}'s vocabulary ({model.vocab}), ignoring label -100; a 0-d loss.",
        [t("logits", LOGITS, "float32"), LABELS], [out("loss", [], "float32")],
        """
        import torch
        import torch.nn.functional as F


        def run(logits, labels):
            return F.cross_entropy(logits, labels, ignore_index=-100)
        """, MAKE_LABELS,
        width=model.vocab, width_axis="vocab_size", rows=upto(TOKENS, 2048), small_rows=4, custom="make_labels",
    )


def cross_entropy_backward(model: Model) -> Spec:
    return autograd_backward(cross_entropy(model), ["logits"], {})


MAKE_IDS = """
def make_input_ids(axes, device):
    return {"input_ids": torch.randint(0, axes["vocab_size"], (axes["num_tokens"],), device=device)}
"""

INPUT_IDS = custom("input_ids", ["num_tokens"], "int64", "token ids in [0, vocab_size)")


def embedding(model: Model, backward: bool = False) -> Spec:
    if backward:
        inputs = [t("grad_output", ["num_tokens", "hidden_size"], "bfloat16"), INPUT_IDS,
                  scalar("num_embeddings", "vocab_size", "int64", "rows of the embedding table")]
        outputs = [out("grad_weight", ["vocab_size", "hidden_size"], "bfloat16")]
        reference = """
            import torch


            def run(grad_output, input_ids, num_embeddings):
                grad_weight = torch.zeros(num_embeddings, grad_output.shape[1], dtype=torch.float32, device=grad_output.device)
                grad_weight.index_add_(0, input_ids, grad_output.to(torch.float32))
                return grad_weight.to(grad_output.dtype)
        """
    else:
        inputs = [INPUT_IDS, t("weight", ["vocab_size", "hidden_size"], "bfloat16")]
        outputs = [out("embeddings", ["num_tokens", "hidden_size"], "bfloat16")]
        reference = """
            import torch
            import torch.nn.functional as F


            def run(input_ids, weight):
                return F.embedding(input_ids, weight)
        """
    axes = {"num_tokens": VAR, "vocab_size": VAR, "hidden_size": model.hidden}
    grid, small = {"num_tokens": TOKENS + [16384], "vocab_size": [model.vocab]}, {"num_tokens": 16, "vocab_size": 512}
    return model_spec(
        model, f"embedding{'_backward' if backward else ''}_bf16_{model.key}", "embedding_backward" if backward else "embedding",
        f"Token embedding of {model.key} (vocab {model.vocab}, hidden {model.hidden})"
        + (": backward, the rows of the weight gradient accumulated with index_add_." if backward else ": one table row per token id."),
        axes,
        inputs,
        outputs,
        reference, MAKE_IDS,
        grid=grid,
        small=small,
        custom="make_input_ids",
    )


IMAGE_IN = ["batch_size", "in_channels", "height", "width"]
IMAGE_OUT = ["batch_size", "out_channels", "height", "width"]
CONV_WEIGHT = ["out_channels", "in_channels", 3, 3]


def conv2d(model: Model, channels: int, dtype: str) -> Spec:
    return model_spec(
        model, f"conv2d_3x3_{SHORT[dtype]}_{model.key}_c{channels}", "conv2d",
        f"3x3 convolution (padding 1) of a {model.key} decoder block with {channels} channels.",
        {"batch_size": VAR, "in_channels": channels, "out_channels": channels, "height": VAR, "width": VAR},
        [t("x", IMAGE_IN, dtype), t("weight", CONV_WEIGHT, dtype), t("bias", ["out_channels"], dtype)],
        [out("y", IMAGE_OUT, dtype)],
        """
        import torch
        import torch.nn.functional as F


        def run(x, weight, bias):
            return F.conv2d(x, weight, bias, padding=1)
        """,
        grid={"batch_size": [1, 2, 4], ("height", "width"): [(32, 32), (64, 64), (128, 128), (256, 256), (512, 512)]},
        small={"batch_size": 1, "height": 8, "width": 8},
    )


def conv2d_backward(model: Model, channels: int, dtype: str) -> Spec:
    return autograd_backward(conv2d(model, channels, dtype), ["x", "weight", "bias"], {"y": "grad_y"})


def kv_cache_write(model: Model) -> Spec:
    kv = ["num_tokens", "num_kv_heads", "head_dim"]
    cache = ["num_slots", "num_kv_heads", "head_dim"]
    return model_spec(
        model, f"kv_cache_write_bf16_{model.key}", "kv_cache_write",
        f"Writes the new keys and values of {model.key} into a slot-indexed KV cache with index_copy_; returns the updated caches.",
        {"num_tokens": VAR, "num_slots": VAR, "num_kv_heads": model.kv_heads, "head_dim": model.head_dim},
        [t("key", kv, "bfloat16"), t("value", kv, "bfloat16"), t("k_cache", cache, "bfloat16"), t("v_cache", cache, "bfloat16"),
         custom("slot_mapping", ["num_tokens"], "int64", "distinct slots of the cache")],
        [out("k_cache_out", cache, "bfloat16"), out("v_cache_out", cache, "bfloat16")],
        """
            import torch


            def run(key, value, k_cache, v_cache, slot_mapping):
                return k_cache.clone().index_copy_(0, slot_mapping, key), v_cache.clone().index_copy_(0, slot_mapping, value)


            def make_slots(axes, device):
                return {"slot_mapping": torch.randperm(axes["num_slots"])[: axes["num_tokens"]].to(device)}
        """,
        constraints=["num_tokens <= num_slots"],
        grid={"num_tokens": TOKENS, "num_slots": [16384, 65536, 262144]},
        small={"num_tokens": 16, "num_slots": 256},
        custom="make_slots",
        valid=lambda axes: axes["num_tokens"] <= axes["num_slots"],
    )


def reshape_and_cache_flash(model: Model, page_size: int = 16) -> Spec:
    kv = ["num_tokens", "num_kv_heads", "head_dim"]
    cache = ["num_pages", "page_size", "num_kv_heads", "head_dim"]
    return model_spec(
        model, f"reshape_and_cache_flash_bf16_{model.key}_ps{page_size}", "kv_cache_write",
        f"Stores new keys/values of {model.key} into paged caches [num_pages, {page_size}, heads, dim] at flat "
        "slots page * page_size + offset (index_copy_ into the flattened pages).",
        {"num_tokens": VAR, "num_pages": VAR, "page_size": page_size, "num_kv_heads": model.kv_heads, "head_dim": model.head_dim},
        [t("key", kv, "bfloat16"), t("value", kv, "bfloat16"), t("key_cache", cache, "bfloat16"), t("value_cache", cache, "bfloat16"),
         custom("slot_mapping", ["num_tokens"], "int64")],
        [out("key_cache_out", cache, "bfloat16"), out("value_cache_out", cache, "bfloat16")],
        """
            import torch


            def run(key, value, key_cache, value_cache, slot_mapping):
                outputs = []
                for new, cache in ((key, key_cache), (value, value_cache)):
                    flat = cache.clone().flatten(0, 1)
                    flat.index_copy_(0, slot_mapping, new)
                    outputs.append(flat.view_as(cache))
                return tuple(outputs)


            def make_slot_mapping(axes, device):
                slots = axes["num_pages"] * axes["page_size"]
                return {"slot_mapping": torch.randperm(slots)[: axes["num_tokens"]].to(device)}
        """,
        constraints=["num_tokens <= num_pages * page_size"],
        grid={"num_tokens": TOKENS, "num_pages": [1024, 4096, 16384]},
        small={"num_tokens": 16, "num_pages": 16},
        custom="make_slot_mapping",
        valid=lambda axes: axes["num_tokens"] <= axes["num_pages"] * page_size,
    )


def patch_embedding(model: Model) -> Spec:
    return model_spec(
        model, f"patch_embedding_fp32_{model.key}", "patch_embedding",
        f"{model.key} embeddings: a 16x16 stride-16 conv2d turns the image into patches, the class token is "
        "prepended and the position embeddings added.",
        {"batch_size": VAR, "image_size": 224, "patch_size": 16, "hidden_size": model.hidden,
              "num_positions": "(image_size // patch_size) ** 2 + 1"},
        [t("pixel_values", ["batch_size", 3, "image_size", "image_size"], "float32"),
         t("patch_weight", ["hidden_size", 3, "patch_size", "patch_size"], "float32"), t("patch_bias", ["hidden_size"], "float32"),
         t("cls_token", [1, 1, "hidden_size"], "float32"), t("position_embeddings", [1, "num_positions", "hidden_size"], "float32")],
        [out("embeddings", ["batch_size", "num_positions", "hidden_size"], "float32")],
        """
            import torch
            import torch.nn.functional as F


            def run(pixel_values, patch_weight, patch_bias, cls_token, position_embeddings):
                patches = F.conv2d(pixel_values, patch_weight, patch_bias, stride=patch_weight.shape[-1])
                patches = patches.flatten(2).transpose(1, 2)
                cls = cls_token.expand(pixel_values.shape[0], -1, -1)
                return torch.cat([cls, patches], dim=1) + position_embeddings
        """,
        grid={"batch_size": BATCH + [128, 256]},
        small={"batch_size": 1},
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L1": [
            silu_and_mul(LLAMA3_8B),
            batch_of_one(silu_and_mul(QWEN2_7B, "float32")),
            batch_of_one(gelu(GEMMA2_9B, "bfloat16", "tanh")),
            batch_of_one(gelu(VIT_LARGE, "float32", "none")),
            softmax(VIT_LARGE, backward=False),
            log_softmax(LLAMA3_8B, backward=False),
            cross_entropy(LLAMA3_8B),
            cross_entropy(GEMMA2_9B),
            embedding(LLAMA3_8B),
            embedding(QWEN2_7B),
            conv2d(SD_VAE, 256, "float32"),
            conv2d(SD_VAE, 512, "float16"),
            kv_cache_write(LLAMA3_8B),
            silu_and_mul_backward(LLAMA3_8B),
            silu_and_mul_backward(MIXTRAL, "float16"),
            gelu_tanh_backward(GEMMA2_9B),
            softmax(VIT_LARGE, backward=True),
            log_softmax(QWEN2_7B, backward=True),
            cross_entropy_backward(LLAMA3_8B),
            embedding(LLAMA3_8B, backward=True),
            conv2d_backward(SD_VAE, 128, "float32"),
        ],
        "L2": [patch_embedding(VIT_LARGE)],
        "FlashInfer-Bench": [
            silu_and_mul(LLAMA3_70B, tag="_flashinfer"),
            gelu_tanh_and_mul(GEMMA2_9B),
            reshape_and_cache_flash(LLAMA3_8B),
        ],
    }
