"""Keyword rules that place a problem in a category, a model domain and a direction.

Each rule is tried in order and the first that matches wins, so the order encodes precedence: an
fp8 GEMM is a GEMM (its precision says fp8), a MoE router is MoE (not a reduction), an RMSNorm
followed by a projection is a norm fusion. Every function returns the value with the source it
came from (op_type, name, description, hf_id or graph), which the index records beside it.
"""

from __future__ import annotations

import re
from typing import Iterable, Literal

Category = Literal["attention", "moe", "norm", "rope", "gemm", "mlp", "conv", "ssm", "embedding", "reduction",
                   "elementwise", "sampling", "quant", "other"]
CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]

# (category, pattern over a lower-cased op_type or name; words are split on _ - . / and spaces)
CATEGORY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((category, re.compile(pattern)) for category, pattern in (
    ("quant", r"(^|_)(de)?quant(i[sz]e)?(_|$)|(^|_)(fp8|fp4|nvfp4|int8|int4)_(de)?quant"),
    ("moe", r"(^|_)(moe|router|experts?|moe_\w+)(_|$)|moe"),
    ("ssm", r"ssm|mamba|selective_scan|chunk_scan|linear_attention|delta_rule|(^|_)scan(_|$)|hyena"),
    ("attention", r"attention|attn|sdpa|(^|_)mla(_|$)|merge_state|kv_cache|(^|_)decode(_|$)|prefill|flash"),
    ("rope", r"rope|rotary"),
    ("mlp", r"mlp|ffn|feed_?forward"),
    ("conv", r"conv"),
    ("norm", r"norm"),
    ("embedding", r"embed"),
    ("gemm", r"gemm|matmul|(^|_)mm(_|$)|bmm|linear|proj|contraction|lora|lm_head|dense"),
    ("sampling", r"sampl|top_?[kp]|min_p|argmax|greedy|temperature"),
    ("reduction", r"softmax|cross_entropy|loss|reduc|(^|_)(sum|mean|max|min|norm2|cumsum|argmin)(_|$)"),
    ("elementwise", r"silu|gelu|relu|swish|sigmoid|tanh|activation|(^|_)(add|mul|scale|cast|clamp|exp|and_mul)(_|$)|elementwise|pointwise"),
))

# Graph fallback: aten packets that say what the captured work is, in the same precedence.
GRAPH_RULES: tuple[tuple[str, frozenset[str]], ...] = (
    ("attention", frozenset({"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                             "_scaled_dot_product_attention_math", "_scaled_dot_product_cudnn_attention", "_flash_attention_forward"})),
    ("conv", frozenset({"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "convolution_backward"})),
    ("norm", frozenset({"native_layer_norm", "native_group_norm", "native_batch_norm", "_fused_rms_norm", "native_layer_norm_backward"})),
    ("embedding", frozenset({"embedding", "embedding_dense_backward"})),
    ("sampling", frozenset({"multinomial", "sort", "topk", "argmax", "cumsum"})),
    ("gemm", frozenset({"mm", "bmm", "addmm", "baddbmm", "matmul", "_scaled_mm", "linear"})),
    ("reduction", frozenset({"_softmax", "_log_softmax", "sum", "mean", "amax", "amin", "max", "min", "logsumexp", "var_mean", "var"})),
)

_SPLIT = re.compile(r"[\s\-./]+")


def _words(text: str) -> str:
    return _SPLIT.sub("_", text.strip().lower())


def category_of(op_type: str | None, name: str, packets: Iterable[str] | None) -> tuple[str, str]:
    """(category, source): from the op_type, else the problem's name, else the captured ops; 'other' when none says."""
    for source, text in (("op_type", op_type), ("name", name)):
        if text:
            words = _words(text)
            for category, pattern in CATEGORY_RULES:
                if pattern.search(words):
                    return category, source
    found = set(packets or ())
    for category, ops in GRAPH_RULES:
        if found & ops:
            return category, "graph"
    if found:
        return "elementwise", "graph"  # only pointwise work (and views) left: no contraction, reduction or gather
    return "other", "none"


# (domain, pattern) over hf_id, then name, then description, lower-cased.
DOMAIN_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((domain, re.compile(pattern)) for domain, pattern in (
    ("ssm", r"mamba|state-spaces|hyena|rwkv|(^|[^a-z])gla([^a-z]|$)|fla-hub|retnet|jamba"),
    ("diffusion", r"diffusion|sd-vae|sd_vae|sdxl|stabilityai|(^|[^a-z])flux|(^|[^a-z])unet|(^|[^a-z])dit([^a-z]|$)|pixart|kandinsky"),
    ("audio", r"whisper|wav2vec|hubert|encodec|audio|speech|(^|[^a-z])asr([^a-z]|$)|musicgen|bark"),
    ("multimodal", r"clip|siglip|llava|blip|idefics|(^|[^a-z])vl([^a-z]|$)|-vl-|paligemma"),
    ("vision", r"(^|[^a-z])vit|resnet|convnext|swin|dino|(^|[^a-z])sam([^a-z]|$)|detr|yolo|efficientnet|segformer|image|vision|patch"),
    ("recsys", r"dlrm|recsys|recommend"),
    ("llm", r"llama|qwen|mistral|mixtral|gemma|deepseek|(^|[^a-z])gpt|bloom|granite|falcon|(^|[^a-z])phi|(^|[^a-z])opt-|"
            r"(^|[^a-z])t5|bert|roberta|olmo|starcoder|codellama|yi-|baichuan|chatglm|internlm|command-r|nemotron|(^|[^a-z])llm"),
))


def domain_of(hf_id: str | None, name: str, description: str) -> tuple[str, str]:
    """(domain, source): the first rule that matches the hf_id, else the name, else the description; 'unknown' otherwise."""
    for source, text in (("hf_id", hf_id), ("name", name), ("description", description)):
        if text:
            lowered = text.lower()
            for domain, pattern in DOMAIN_RULES:
                if pattern.search(lowered):
                    return domain, source
    return "unknown", "none"


BACKWARD = re.compile(r"(^|[^a-z])(backward|bwd|grad|grads|vjp|dgrad|wgrad)([^a-z]|$)")
BACKWARD_DESCRIPTION = re.compile(r"(^|[^a-z])(backward (of|pass)|gradients? (w\.r\.t\.|of|with respect)|vjp)")
GRADIENT_NAME = re.compile(r"^(grad|d)_|_grad$|^grad[a-z]*$|^d[a-z]$")
BACKWARD_OPS = re.compile(r"_backward$")


def direction_of(name: str, op_type: str | None, tags: list[str], description: str, outputs: list[str],
                 packets: Iterable[str] | None) -> tuple[str, str]:
    """(forward | backward, source). Backward when the name, op_type or tags say so, else when the description
    speaks of a backward pass or gradients, else when every output is named as a gradient (grad_x, dx) or
    the capture holds aten backward ops (a reference that calls torch.autograd)."""
    for source, texts in (("name", [name]), ("op_type", [op_type or ""]), ("tags", tags)):
        if any(BACKWARD.search(text.lower()) for text in texts):
            return "backward", source
    if BACKWARD_DESCRIPTION.search(description.lower()):
        return "backward", "description"
    if outputs and all(GRADIENT_NAME.search(output.lower()) for output in outputs):
        return "backward", "outputs"
    if any(BACKWARD_OPS.search(packet) for packet in packets or ()):
        return "backward", "graph"
    return "forward", "default"
