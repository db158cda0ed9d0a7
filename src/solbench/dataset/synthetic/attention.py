"""Attention problems: SDPA prefill, explicit masks, decode with a KV cache, paged and ragged
attention (page tables made by a custom entry point), MLA, sliding window, softcapping, backward."""

from __future__ import annotations

import math

from solbench.dataset.synthetic.core import BATCH, PAGES, SEQ, SHORT, VAR, Spec, autograd_backward, custom, model_spec, out, scalar, t
from solbench.dataset.synthetic.models import (
    BERT_LARGE, BLOOM_7B, CLIP_TEXT, DEEPSEEK_V2_LITE, DEEPSEEK_V3, GEMMA2_9B, LLAMA3_70B, LLAMA3_8B, MIXTRAL, QWEN2_7B,
    QWEN3_MOE, T5_XXL, VIT_LARGE, WHISPER, Model,
)
from solbench.dataset.synthetic.snippets import (
    MASKED_ATTENTION, PAGE_TABLE, PER_SEQUENCE_ATTENTION, RAGGED_PAGE_TABLE, REQUEST_PAGES, RMS_NORM, ROTATE_HALF,
)

GQA = "num_qo_heads % num_kv_heads == 0"
BHSD = ["batch_size", "num_qo_heads", "seq_len", "head_dim"]
KV_BHSD = ["batch_size", "num_kv_heads", "seq_len", "head_dim"]
SMALL_BS = {"batch_size": 1, "seq_len": 128}


def _heads(model: Model, heads: int | None = None, kv_heads: int | None = None) -> dict:
    return {"num_qo_heads": heads or model.heads, "num_kv_heads": kv_heads or model.kv_heads, "head_dim": model.head_dim}


def _sm_scale(model: Model) -> float:
    return 1.0 / math.sqrt(model.head_dim)


def sdpa_prefill(model: Model, dtype: str, gqa: str, causal: bool = True) -> Spec:
    """gqa: 'enable_gqa' (SDPA broadcasts the kv heads) or 'repeat' (kv heads repeated first)."""
    if gqa == "enable_gqa":
        reference = f"""
            import torch
            import torch.nn.functional as F


            def run(q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal={causal}, enable_gqa=True)
        """
        inputs = [t("q", BHSD, dtype), t("k", KV_BHSD, dtype), t("v", KV_BHSD, dtype)]
    else:
        reference = f"""
            import torch
            import torch.nn.functional as F


            def run(query, key, value, sm_scale):
                group = query.shape[1] // key.shape[1]
                key = key.repeat_interleave(group, dim=1)
                value = value.repeat_interleave(group, dim=1)
                return F.scaled_dot_product_attention(query, key, value, is_causal={causal}, scale=sm_scale)
        """
        inputs = [t("query", BHSD, dtype), t("key", KV_BHSD, dtype), t("value", KV_BHSD, dtype), scalar("sm_scale", _sm_scale(model))]
    kind = "causal" if causal else "full"
    seqs = SEQ if causal else [197, 256, 577, 1024, 1500]
    return model_spec(
        model, f"sdpa_prefill_{kind}_{SHORT[dtype]}_{model.key}", "attention",
        f"{'Causal' if causal else 'Bidirectional'} prefill attention of {model.key} "
        f"({model.heads} query heads, {model.kv_heads} kv heads, head_dim {model.head_dim}) through SDPA.",
        {"batch_size": VAR, "seq_len": VAR, **_heads(model)},
        inputs,
        [out("output", BHSD, dtype)],
        reference,
        constraints=[GQA],
        grid={"batch_size": BATCH, "seq_len": seqs},
        small=SMALL_BS,
    )


def causal_mask_attention(model: Model, dtype: str, softcap: bool = False, window: bool = False) -> Spec:
    extra_inputs = []
    lines = ["    mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device), 1)"]
    if window:
        extra_inputs.append(scalar("window_size", model.extra.get("window", 4096), "int64"))
        lines.append("    mask = mask | torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device), -window_size)")
    call = "masked_attention(q, k, v, sm_scale, mask)"
    if softcap:
        extra_inputs.append(scalar("softcap", model["softcap"]))
        call = "masked_attention(q, k, v, sm_scale, mask, softcap)"
    params = ", ".join(["q", "k", "v", "sm_scale"] + [x.name for x in extra_inputs])
    body = "\n".join(lines)
    reference = f"import torch\n\n\ndef run({params}):\n    seq_len = q.shape[-2]\n{body}\n    return {call}\n"
    tags = "_".join(x for x, on in (("softcap", softcap), ("sliding_window", window)) if on) or "causal_mask"
    return model_spec(
        model, f"attention_{tags}_{SHORT[dtype]}_{model.key}", "attention",
        f"Causal attention of {model.key} with the mask built in the reference from the shapes "
        "(torch.triu, masked_fill with -inf, softmax in fp32)"
        + (", tanh softcapping of the scores" if softcap else "")
        + (", and a sliding window of window_size tokens" if window else "") + ".",
        {"batch_size": VAR, "seq_len": VAR, **_heads(model)},
        [t("q", BHSD, dtype), t("k", KV_BHSD, dtype), t("v", KV_BHSD, dtype), scalar("sm_scale", _sm_scale(model))] + extra_inputs,
        [out("o", BHSD, dtype)],
        reference, MASKED_ATTENTION,
        constraints=[GQA],
        grid={"batch_size": BATCH[:5], "seq_len": SEQ[:6]},
        small=SMALL_BS,
    )


def gqa_decode(model: Model, tp: int = 1, dtype: str = "bfloat16") -> Spec:
    heads = _heads(model, model.heads // tp, max(1, model.kv_heads // tp))
    return model_spec(
        model, f"gqa_decode_{SHORT[dtype]}_{model.key}" + (f"_tp{tp}" if tp > 1 else ""), "attention_decode",
        f"One decode step of {model.key}'s grouped-query attention"
        + (f" (tensor-parallel rank of {tp})" if tp > 1 else "")
        + " against a contiguous KV cache holding kv_len tokens per request.",
        {"batch_size": VAR, "kv_len": VAR, **heads},
        [
            t("q", ["batch_size", 1, "num_qo_heads", "head_dim"], dtype),
            t("k_cache", ["batch_size", "kv_len", "num_kv_heads", "head_dim"], dtype),
            t("v_cache", ["batch_size", "kv_len", "num_kv_heads", "head_dim"], dtype),
            scalar("sm_scale", _sm_scale(model)),
        ],
        [out("output", ["batch_size", 1, "num_qo_heads", "head_dim"], dtype)],
        """
            import torch


            def run(q, k_cache, v_cache, sm_scale):
                batch, _, num_heads, head_dim = q.shape
                num_kv_heads = k_cache.shape[2]
                qg = q.to(torch.float32).view(batch, num_kv_heads, num_heads // num_kv_heads, head_dim)
                scores = torch.einsum("bhgd,bshd->bhgs", qg, k_cache.to(torch.float32)) * sm_scale
                probs = torch.softmax(scores, dim=-1)
                o = torch.einsum("bhgs,bshd->bhgd", probs, v_cache.to(torch.float32))
                return o.reshape(batch, 1, num_heads, head_dim).to(q.dtype)
        """,
        constraints=[GQA],
        grid={"batch_size": BATCH, "kv_len": SEQ + [16384, 32768]},
        small={"batch_size": 1, "kv_len": 256},
    )


def additive_mask_attention(model: Model, dtype: str) -> Spec:
    shape = ["batch_size", "num_heads", "seq_len", "head_dim"]
    return model_spec(
        model, f"attention_additive_mask_{SHORT[dtype]}_{model.key}", "attention",
        f"Self-attention of {model.key} with an additive attention_mask [batch, 1, seq, seq] added to the scaled scores.",
        {"batch_size": VAR, "seq_len": VAR, "num_heads": model.heads, "head_dim": model.head_dim},
        [t("q", shape, dtype), t("k", shape, dtype), t("v", shape, dtype),
         t("attention_mask", ["batch_size", 1, "seq_len", "seq_len"], dtype, "additive mask, broadcast over heads")],
        [out("context", shape, dtype)],
        """
            import torch
            import torch.nn.functional as F


            def run(q, k, v, attention_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
        """,
        grid={"batch_size": BATCH, "seq_len": [64, 128, 256, 448, 512]},
        small={"batch_size": 1, "seq_len": 64},
    )


def text_mask_attention(model: Model, dtype: str, causal: bool) -> Spec:
    shape = ["batch_size", "num_heads", "seq_len", "head_dim"]
    causal_lines = (
        "    causal = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device), 1)\n"
        "    masked = masked | causal\n" if causal else ""
    )
    scale = "q.shape[-1] ** -0.5" if causal else "1.0"
    reference = (
        "import torch\n\n\ndef run(q, k, v, text_mask):\n"
        "    seq_len = q.shape[-2]\n"
        f"    scores = (q.to(torch.float32) @ k.to(torch.float32).transpose(-1, -2)) * {scale}\n"
        "    masked = (text_mask < 0.5)[:, None, None, :]\n"
        f"{causal_lines}"
        "    scores = scores.masked_fill(masked, torch.finfo(torch.float32).min)\n"
        "    return (torch.softmax(scores, dim=-1) @ v.to(torch.float32)).to(q.dtype)\n"
    )
    return model_spec(
        model, f"attention_text_mask_{SHORT[dtype]}_{model.key}", "attention",
        f"Text-encoder attention of {model.key}: padded tokens (text_mask 0) are masked out of every query's keys"
        + (" on top of the causal mask." if causal else "."),
        {"batch_size": VAR, "seq_len": VAR, "num_heads": model.heads, "head_dim": model.head_dim},
        [t("q", shape, dtype), t("k", shape, dtype), t("v", shape, dtype),
         t("text_mask", ["batch_size", "seq_len"], dtype, "1 for real tokens, 0 for padding")],
        [out("out", shape, dtype)],
        reference,
        grid={"batch_size": BATCH + [128], "seq_len": [model.max_pos] if causal else [64, 128, 256, 512]},
        small={"batch_size": 1, "seq_len": 64 if not causal else model.max_pos},
    )


def attn_weights_value(model: Model) -> Spec:
    return model_spec(
        model, f"attention_weights_value_fp32_{model.key}", "attention",
        f"Second half of {model.key} attention: softmax probabilities attn_weights @ v, heads merged into the hidden dimension.",
        {"batch_size": VAR, "seq_len": VAR, "num_heads": model.heads, "head_dim": model.head_dim, "hidden_size": model.hidden},
        [t("attn_weights", ["batch_size", "num_heads", "seq_len", "seq_len"], "float32"),
         t("v", ["batch_size", "num_heads", "seq_len", "head_dim"], "float32")],
        [out("context", ["batch_size", "seq_len", "hidden_size"], "float32")],
        """
            import torch


            def run(attn_weights, v):
                context = torch.matmul(attn_weights, v)
                return context.transpose(1, 2).flatten(2)
        """,
        constraints=["hidden_size == num_heads * head_dim"],
        grid={"batch_size": BATCH, "seq_len": [197, 257, 577, 1024]},
        small={"batch_size": 1, "seq_len": 197},
    )


def _paged_axes(page_size: int, heads: dict) -> dict:
    return {"batch_size": VAR, "num_pages": VAR, "num_kv_indices": VAR, "page_size": page_size, **heads,
            "batch_size_plus_one": "batch_size + 1"}


PAGED_CONSTRAINTS = ["num_kv_indices >= batch_size", "num_kv_indices <= num_pages"]


def _paged_grid(page_size: int) -> dict:
    pools = PAGES if page_size > 1 else [p * 16 for p in PAGES]
    return {"batch_size": BATCH, "num_pages": pools, "num_kv_indices": sorted({64, 256, 1024, 4096} | set(pools))}


def _paged_valid(axes: dict) -> bool:
    return axes["batch_size"] <= axes["num_kv_indices"] <= axes["num_pages"]


PAGE_TABLE_INPUTS = [
    custom("kv_indptr", ["batch_size_plus_one"], "int32", "request b owns kv_indices[kv_indptr[b]:kv_indptr[b+1]]"),
    custom("kv_indices", ["num_kv_indices"], "int32", "page ids into the pool"),
    custom("kv_last_page_len", ["batch_size"], "int32", "tokens in each request's last page (1..page_size)"),
]

MAKE_PAGE_TABLE = """
def make_page_table(axes, device):
    return page_table(axes["batch_size"], axes["num_kv_indices"], axes["num_pages"], axes["page_size"], device)
"""


def paged_decode(model: Model, page_size: int, tp: int = 1, softcap: bool = False) -> Spec:
    heads = _heads(model, model.heads // tp, max(1, model.kv_heads // tp))
    cap_input = [scalar("logits_soft_cap", model["softcap"])] if softcap else []
    cap_param = ", logits_soft_cap" if softcap else ""
    cap_line = "        scores = logits_soft_cap * torch.tanh(scores / logits_soft_cap)\n" if softcap else ""
    reference = f"""import torch


def run(q, kv_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale{cap_param}):
    batch, num_heads, head_dim = q.shape
    page_size, num_kv_heads = kv_cache.shape[2], kv_cache.shape[3]
    group = num_heads // num_kv_heads
    out = torch.empty_like(q)
    lse = torch.empty(batch, num_heads, dtype=torch.float32, device=q.device)
    for b in range(batch):
        pages, length = request_pages(kv_indptr, kv_indices, kv_last_page_len, page_size, b)
        k = kv_cache[pages, 0].flatten(0, 1)[:length].to(torch.float32)
        v = kv_cache[pages, 1].flatten(0, 1)[:length].to(torch.float32)
        qb = q[b].to(torch.float32).view(num_kv_heads, group, head_dim)
        scores = torch.einsum("hgd,nhd->hgn", qb, k) * sm_scale
{cap_line}        lse[b] = torch.logsumexp(scores, dim=-1).reshape(num_heads)
        o = torch.einsum("hgn,nhd->hgd", torch.softmax(scores, dim=-1), v)
        out[b] = o.reshape(num_heads, head_dim).to(q.dtype)
    return out, lse
"""
    name = f"paged_decode_bf16_{model.key}_ps{page_size}" + (f"_tp{tp}" if tp > 1 else "") + ("_softcap" if softcap else "")
    return model_spec(
        model, name, "paged_attention_decode",
        f"Batched decode attention of {model.key} over a paged KV cache (pages of {page_size} tokens, "
        "layout [num_pages, 2, page_size, num_kv_heads, head_dim]); the page table comes from kv_indptr, kv_indices "
        "and kv_last_page_len. Returns the output and the natural-log LSE of the scores"
        + (", softcapped with tanh." if softcap else "."),
        _paged_axes(page_size, heads),
        [t("q", ["batch_size", "num_qo_heads", "head_dim"], "bfloat16"),
         t("kv_cache", ["num_pages", 2, "page_size", "num_kv_heads", "head_dim"], "bfloat16")]
        + PAGE_TABLE_INPUTS + [scalar("sm_scale", _sm_scale(model))] + cap_input,
        [out("output", ["batch_size", "num_qo_heads", "head_dim"], "bfloat16"),
         out("lse", ["batch_size", "num_qo_heads"], "float32")],
        reference, REQUEST_PAGES, PAGE_TABLE, MAKE_PAGE_TABLE,
        constraints=[GQA] + PAGED_CONSTRAINTS,
        grid=_paged_grid(page_size),
        small={"batch_size": 2, "num_pages": 32 if page_size > 1 else 512, "num_kv_indices": 16 if page_size > 1 else 256},
        custom="make_page_table",
        valid=_paged_valid,
    )


def paged_prefill(model: Model, page_size: int) -> Spec:
    heads = _heads(model)
    reference = """import torch


SCORES_PER_BLOCK = 1 << 28  # fp32 scores of one block of queries (1 GiB): a request of 8,192 queries over
                            # 262,144 cached tokens would need 256 GiB at once


def run(q, kv_cache, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    page_size, num_kv_heads = kv_cache.shape[2], kv_cache.shape[3]
    group = q.shape[1] // num_kv_heads
    out = torch.empty_like(q)
    for b in range(qo_indptr.numel() - 1):
        start, end = int(qo_indptr[b]), int(qo_indptr[b + 1])
        pages, length = request_pages(kv_indptr, kv_indices, kv_last_page_len, page_size, b)
        k = kv_cache[pages, 0].flatten(0, 1)[:length].to(torch.float32).repeat_interleave(group, dim=1)
        v = kv_cache[pages, 1].flatten(0, 1)[:length].to(torch.float32).repeat_interleave(group, dim=1)
        block = max(1, SCORES_PER_BLOCK // (q.shape[1] * max(length, 1)))
        for first in range(start, end, block):
            last = min(first + block, end)
            scores = torch.einsum("qhd,khd->hqk", q[first:last].to(torch.float32), k) * sm_scale
            # queries are the last (end - start) tokens of the request: causal against the whole cache
            mask = torch.triu(torch.ones(last - first, length, dtype=torch.bool, device=q.device), length - (end - first) + 1)
            probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
            out[first:last] = torch.einsum("hqk,khd->qhd", probs, v).to(q.dtype)
    return out
"""
    make = """
def make_inputs(axes, device):
    made, q_lens = ragged_page_table(axes, axes["total_q"], device)
    qo_indptr = torch.zeros(axes["batch_size"] + 1, dtype=torch.int32)
    qo_indptr[1:] = torch.cumsum(q_lens, 0)
    made["qo_indptr"] = qo_indptr.to(device)
    return made
"""

    return model_spec(
        model, f"paged_prefill_causal_bf16_{model.key}_ps{page_size}", "paged_attention_prefill",
        f"Batched causal prefill of {model.key} over a paged KV cache: ragged queries (qo_indptr) are the newest "
        "tokens of each request and attend to all of its cached tokens up to their own position.",
        {**_paged_axes(page_size, heads), "total_q": VAR},
        [t("q", ["total_q", "num_qo_heads", "head_dim"], "bfloat16"),
         t("kv_cache", ["num_pages", 2, "page_size", "num_kv_heads", "head_dim"], "bfloat16"),
         custom("qo_indptr", ["batch_size_plus_one"], "int32")] + PAGE_TABLE_INPUTS + [scalar("sm_scale", _sm_scale(model))],
        [out("output", ["total_q", "num_qo_heads", "head_dim"], "bfloat16")],
        reference, REQUEST_PAGES, PAGE_TABLE, RAGGED_PAGE_TABLE, make,
        grid={"batch_size": BATCH[:6], "total_q": [512, 2048, 8192, 16384], "num_pages": PAGES[1:], "num_kv_indices": [1024, 2048, 4096, 16384]},
        small={"batch_size": 2, "total_q": 40, "num_pages": 32, "num_kv_indices": 12},
        **_ragged_pages(page_size, "total_q"),
    )


def _ragged_pages(page_size: int, count: str) -> dict:
    """Constraints, check and entry point of a paged problem whose `count` new tokens are split over the
    requests, each holding at least its new tokens (see ragged_page_table)."""
    def valid(axes: dict) -> bool:
        need = axes[count] // page_size + axes["batch_size"]
        return axes["batch_size"] <= axes[count] and need <= axes["num_kv_indices"] <= axes["num_pages"]
    constraints = [GQA, f"{count} >= batch_size", f"num_kv_indices >= {count} // page_size + batch_size", "num_kv_indices <= num_pages"]
    return {"constraints": constraints, "valid": valid, "custom": "make_inputs"}


def append_paged_kv_cache(model: Model, page_size: int) -> Spec:
    heads = _heads(model)
    new = ["nnz", "num_kv_heads", "head_dim"]
    cache = ["num_pages", 2, "page_size", "num_kv_heads", "head_dim"]
    make = """
def make_inputs(axes, device):
    made, counts = ragged_page_table(axes, axes["nnz"], device)
    indptr, last = made["kv_indptr"].cpu().long(), made["kv_last_page_len"].cpu().long()
    lengths = (indptr[1:] - indptr[:-1] - 1) * axes["page_size"] + last
    batch_indices = torch.repeat_interleave(torch.arange(axes["batch_size"]), counts)
    starts = torch.cumsum(counts, 0) - counts
    offsets = torch.arange(axes["nnz"]) - starts[batch_indices]
    made["batch_indices"] = batch_indices.to(torch.int32).to(device)
    made["positions"] = (lengths - counts)[batch_indices].add(offsets).to(torch.int32).to(device)
    return made
"""
    return model_spec(
        model, f"append_paged_kv_cache_bf16_{model.key}_ps{page_size}", "kv_cache_write",
        f"Appends new keys/values of {model.key} to a paged KV cache: token i of request batch_indices[i] at "
        "position positions[i] goes to page kv_indices[kv_indptr[b] + position // page_size], slot position % page_size.",
        {**_paged_axes(page_size, heads), "nnz": VAR},
        [t("append_key", new, "bfloat16"), t("append_value", new, "bfloat16"), t("kv_cache", cache, "bfloat16"),
         custom("batch_indices", ["nnz"], "int32"), custom("positions", ["nnz"], "int32")] + PAGE_TABLE_INPUTS,
        [out("kv_cache_out", cache, "bfloat16")],
        """
            import torch


            def run(append_key, append_value, kv_cache, batch_indices, positions, kv_indptr, kv_indices, kv_last_page_len):
                page_size = kv_cache.shape[2]
                pages = kv_indices[kv_indptr[batch_indices.long()].long() + positions.long() // page_size].long()
                slots = positions.long() % page_size
                out = kv_cache.clone()
                out[pages, 0, slots] = append_key
                out[pages, 1, slots] = append_value
                return out
        """, PAGE_TABLE, RAGGED_PAGE_TABLE, make,
        grid={"batch_size": BATCH, "nnz": [64, 512, 2048, 8192], "num_pages": PAGES[1:], "num_kv_indices": [1024, 4096, 16384]},
        small={"batch_size": 2, "nnz": 24, "num_pages": 32, "num_kv_indices": 8},
        **_ragged_pages(page_size, "nnz"),
    )


def decode_with_cache_append(model: Model) -> Spec:
    q_shape = ["batch_size", 1, "num_qo_heads", "head_dim"]
    new = ["batch_size", 1, "num_kv_heads", "head_dim"]
    cache = ["batch_size", "max_seq_len", "num_kv_heads", "head_dim"]
    return model_spec(
        model, f"decode_with_kv_append_bf16_{model.key}", "attention_decode",
        f"A decode step of {model.key}: the new key/value of each request is written into its cache at "
        "cache_seqlens[b], then the query attends to the cache up to and including it.",
        {"batch_size": VAR, "max_seq_len": VAR, **_heads(model)},
        [t("q", q_shape, "bfloat16"), t("k_new", new, "bfloat16"), t("v_new", new, "bfloat16"),
         t("k_cache", cache, "bfloat16"), t("v_cache", cache, "bfloat16"),
         custom("cache_seqlens", ["batch_size"], "int32", "tokens already cached per request, < max_seq_len"),
         scalar("sm_scale", _sm_scale(model))],
        [out("out", q_shape, "bfloat16"), out("k_cache_out", cache, "bfloat16"), out("v_cache_out", cache, "bfloat16")],
        """
            import torch


            def run(q, k_new, v_new, k_cache, v_cache, cache_seqlens, sm_scale):
                batch, _, num_heads, head_dim = q.shape
                num_kv_heads, lengths = k_cache.shape[2], cache_seqlens.long()
                rows = torch.arange(batch, device=q.device)
                k_cache, v_cache = k_cache.clone(), v_cache.clone()
                k_cache[rows, lengths] = k_new[:, 0]
                v_cache[rows, lengths] = v_new[:, 0]
                visible = torch.arange(k_cache.shape[1], device=q.device)[None, :] <= lengths[:, None]
                qg = q.to(torch.float32).view(batch, num_kv_heads, num_heads // num_kv_heads, head_dim)
                scores = torch.einsum("bhgd,bshd->bhgs", qg, k_cache.to(torch.float32)) * sm_scale
                probs = torch.softmax(scores.masked_fill(~visible[:, None, None, :], float("-inf")), dim=-1)
                o = torch.einsum("bhgs,bshd->bhgd", probs, v_cache.to(torch.float32))
                return o.reshape(batch, 1, num_heads, head_dim).to(q.dtype), k_cache, v_cache


            def make_cache_seqlens(axes, device):
                lengths = torch.randint(0, axes["max_seq_len"], (axes["batch_size"],))
                return {"cache_seqlens": lengths.to(torch.int32).to(device)}
        """,
        constraints=[GQA],
        grid={"batch_size": BATCH, "max_seq_len": SEQ},
        small={"batch_size": 2, "max_seq_len": 128},
        custom="make_cache_seqlens",
    )


def alibi_attention(model: Model) -> Spec:
    shape = ["batch_size", "num_heads", "seq_len", "head_dim"]
    return model_spec(
        model, f"alibi_causal_attention_bf16_{model.key}", "attention",
        f"Causal attention of {model.key} with ALiBi: per-head linear distance penalties (slopes 2^(-8h/H)) built "
        "in the reference and passed to SDPA as an additive mask.",
        {"batch_size": VAR, "seq_len": VAR, "num_heads": model.heads, "head_dim": model.head_dim},
        [t("q", shape, "bfloat16"), t("k", shape, "bfloat16"), t("v", shape, "bfloat16")],
        [out("out", shape, "bfloat16")],
        """
            import torch
            import torch.nn.functional as F


            def run(q, k, v):
                num_heads, seq_len = q.shape[1], q.shape[2]
                slopes = 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, dtype=torch.float32, device=q.device) / num_heads)
                pos = torch.arange(seq_len, device=q.device)
                bias = slopes[:, None, None] * (pos[None, None, :] - pos[None, :, None]).to(torch.float32)
                causal = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device), 1)
                bias = bias.masked_fill(causal, float("-inf"))
                return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))
        """,
        grid={"batch_size": BATCH[:5], "seq_len": SEQ[:5]},
        small={"batch_size": 1, "seq_len": 64},
    )


MAKE_CU_SEQLENS = """
def make_cu_seqlens(axes, device):
    batch, total = axes["batch_size"], axes["total_tokens"]
    cuts = (torch.randperm(total - 1)[: batch - 1] + 1).sort().values
    bounds = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.tensor([total])])
    return {"cu_seqlens": bounds.to(torch.int32).to(device)}
"""


def ragged_prefill(model: Model, padded: bool) -> Spec:
    if padded:
        reference = """
            import torch
            import torch.nn.functional as F


            def run(q, k, v, cu_seqlens, sm_scale):
                lens = (cu_seqlens[1:] - cu_seqlens[:-1]).long()
                max_len = int(lens.max().item())
                pos = torch.arange(max_len, device=q.device)
                valid = pos[None, :] < lens[:, None]
                rows = (cu_seqlens[:-1, None].long() + pos[None, :]).clamp(max=q.shape[0] - 1)
                qp, kp, vp = (x[rows].transpose(1, 2) for x in (q, k, v))
                causal = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool, device=q.device))
                mask = causal[None, None] & valid[:, None, None, :]
                o = F.scaled_dot_product_attention(qp, kp, vp, attn_mask=mask, scale=sm_scale, enable_gqa=True)
                return o.transpose(1, 2)[valid]
        """
    else:
        reference = """
            import torch
            import torch.nn.functional as F


            def run(q, k, v, cu_seqlens, sm_scale):
                return attention_per_sequence(q, k, v, cu_seqlens, sm_scale)
        """
    return model_spec(
        model, f"ragged_prefill_causal_bf16_{model.key}" + ("_padded" if padded else ""), "ragged_attention_prefill",
        f"Causal self-attention of {model.key} over a ragged batch of sequences packed along the token axis "
        "(cu_seqlens holds the sequence boundaries)"
        + ("; the reference pads to the longest sequence, read with .item()." if padded else "; one SDPA per sequence."),
        {"total_tokens": VAR, "batch_size": VAR, "batch_size_plus_one": "batch_size + 1", **_heads(model)},
        [t("q", ["total_tokens", "num_qo_heads", "head_dim"], "bfloat16"),
         t("k", ["total_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
         t("v", ["total_tokens", "num_kv_heads", "head_dim"], "bfloat16"),
         custom("cu_seqlens", ["batch_size_plus_one"], "int32", "sorted boundaries, 0 first and total_tokens last"),
         scalar("sm_scale", _sm_scale(model))],
        [out("o", ["total_tokens", "num_qo_heads", "head_dim"], "bfloat16")],
        reference, *([] if padded else [PER_SEQUENCE_ATTENTION]), MAKE_CU_SEQLENS,
        constraints=[GQA, "total_tokens >= batch_size"],
        grid={"total_tokens": [1024, 2048, 4096, 8192, 16384], "batch_size": BATCH},
        small={"total_tokens": 96, "batch_size": 3},
        custom="make_cu_seqlens",
        valid=lambda axes: axes["total_tokens"] >= axes["batch_size"],
    )


def mla_paged_decode(model: Model) -> Spec:
    reference = """import torch


def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    batch, num_heads, _ = q_nope.shape
    page_size = ckv_cache.shape[1]
    out = torch.empty_like(q_nope)
    lse = torch.empty(batch, num_heads, dtype=torch.float32, device=q_nope.device)
    for b in range(batch):
        pages, length = request_pages(kv_indptr, kv_indices, kv_last_page_len, page_size, b)
        ckv = ckv_cache[pages].flatten(0, 1)[:length].to(torch.float32)
        kpe = kpe_cache[pages].flatten(0, 1)[:length].to(torch.float32)
        scores = (q_nope[b].to(torch.float32) @ ckv.T + q_pe[b].to(torch.float32) @ kpe.T) * sm_scale
        lse[b] = torch.logsumexp(scores, dim=-1)
        out[b] = (torch.softmax(scores, dim=-1) @ ckv).to(q_nope.dtype)
    return out, lse
"""
    page_size = 64
    heads = model.heads
    return model_spec(
        model, f"mla_paged_decode_bf16_{model.key}_ps{page_size}", "mla_paged_decode",
        f"Multi-head latent attention decode of {model.key} in its absorbed form: {heads} heads attend to a paged "
        f"cache of compressed kv (rank {model['kv_lora']}) and rope keys ({model['rope_dim']}); output in the latent space.",
        {"batch_size": VAR, "num_pages": VAR, "num_kv_indices": VAR, "page_size": page_size, "num_heads": heads,
              "kv_lora_rank": model["kv_lora"], "rope_dim": model["rope_dim"], "batch_size_plus_one": "batch_size + 1"},
        [t("q_nope", ["batch_size", "num_heads", "kv_lora_rank"], "bfloat16"),
         t("q_pe", ["batch_size", "num_heads", "rope_dim"], "bfloat16"),
         t("ckv_cache", ["num_pages", "page_size", "kv_lora_rank"], "bfloat16"),
         t("kpe_cache", ["num_pages", "page_size", "rope_dim"], "bfloat16")]
        + PAGE_TABLE_INPUTS + [scalar("sm_scale", 1.0 / math.sqrt(model["nope_dim"] + model["rope_dim"]))],
        [out("output", ["batch_size", "num_heads", "kv_lora_rank"], "bfloat16"), out("lse", ["batch_size", "num_heads"], "float32")],
        reference, REQUEST_PAGES, PAGE_TABLE, MAKE_PAGE_TABLE,
        constraints=PAGED_CONSTRAINTS,
        grid={"batch_size": BATCH, "num_pages": [512, 2048, 8192], "num_kv_indices": [64, 256, 1024, 2048, 8192]},
        small={"batch_size": 2, "num_pages": 32, "num_kv_indices": 8},
        custom="make_page_table",
        valid=_paged_valid,
    )


def merge_states(model: Model, dtype: str = "bfloat16") -> Spec:
    return model_spec(
        model, f"merge_attention_states_{SHORT[dtype]}_{model.key}", "merge_state",
        f"Merges two partial attention results of {model.key} (e.g. prefix cache and new tokens) by their LSEs.",
        {"num_tokens": VAR, "num_heads": model.heads, "head_dim": model.head_dim},
        [t("v_a", ["num_tokens", "num_heads", "head_dim"], dtype), t("s_a", ["num_tokens", "num_heads"], "float32"),
         t("v_b", ["num_tokens", "num_heads", "head_dim"], dtype), t("s_b", ["num_tokens", "num_heads"], "float32")],
        [out("v_merged", ["num_tokens", "num_heads", "head_dim"], dtype), out("s_merged", ["num_tokens", "num_heads"], "float32")],
        """
            import torch


            def run(v_a, s_a, v_b, s_b):
                s_max = torch.maximum(s_a, s_b)
                w_a = torch.exp(s_a - s_max)
                w_b = torch.exp(s_b - s_max)
                total = w_a + w_b
                v = (v_a.to(torch.float32) * w_a[..., None] + v_b.to(torch.float32) * w_b[..., None]) / total[..., None]
                return v.to(v_a.dtype), s_max + torch.log(total)
        """,
        grid={"num_tokens": [1, 16, 128, 512, 2048, 8192, 16384, 32768]},
        small={"num_tokens": 16},
        neg_inf=True,
    )


def attention_backward(model: Model, dtype: str, causal: bool) -> Spec:
    return autograd_backward(sdpa_prefill(model, dtype, "enable_gqa", causal), ["q", "k", "v"], {"output": "grad_out"},
                             small={"batch_size": 1, "seq_len": 64})


def softcap_attention_backward(model: Model) -> Spec:
    return autograd_backward(causal_mask_attention(model, "bfloat16", softcap=True), ["q", "k", "v"], {"o": "grad_o"},
                             small={"batch_size": 1, "seq_len": 64})


def mla_prefill(model: Model, heads_var: bool) -> Spec:
    nope, rope, vdim, rank = model["nope_dim"], model["rope_dim"], model["v_dim"], model["kv_lora"]
    reference = """
        import torch
        import torch.nn.functional as F


        def run(q, compressed_kv, k_pe, kv_norm_weight, kv_b_proj, cos, sin, sm_scale):
            batch, seq_len, num_heads, qk_dim = q.shape
            rope_dim = k_pe.shape[-1]
            nope_dim = qk_dim - rope_dim
            kv = rms_norm(compressed_kv, kv_norm_weight, 1e-6) @ kv_b_proj.T
            k_nope, v = kv.view(batch, seq_len, num_heads, -1).split([nope_dim, kv.shape[-1] // num_heads - nope_dim], dim=-1)
            q_nope, q_pe = q.split([nope_dim, rope_dim], dim=-1)
            q_pe = q_pe * cos[:, None, :] + rotate_half(q_pe) * sin[:, None, :]
            k_pe = (k_pe * cos + rotate_half(k_pe) * sin)[:, :, None, :].expand(-1, -1, num_heads, -1)
            query = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)
            key = torch.cat([k_nope, k_pe], dim=-1).transpose(1, 2)
            o = F.scaled_dot_product_attention(query, key, v.transpose(1, 2), is_causal=True, scale=sm_scale)
            return o.transpose(1, 2)
    """
    return model_spec(
        model, f"mla_prefill_bf16_{model.key}", "mla_prefill",
        f"Multi-head latent attention prefill of {model.key}: the compressed kv (rank {rank}) is RMS-normalised and "
        f"expanded by the low-rank kv_b_proj into per-head keys ({nope} no-rope dims) and values ({vdim}); rope on the "
        f"{rope} shared rope dims; causal SDPA.",
        {"batch_size": VAR, "seq_len": VAR, "num_heads": VAR if heads_var else model.heads, "qk_head_dim": nope + rope,
              "kv_lora_rank": rank, "rope_dim": rope, "v_head_dim": vdim, "kv_b_rows": f"num_heads * ({nope} + v_head_dim)"},
        [t("q", ["batch_size", "seq_len", "num_heads", "qk_head_dim"], "bfloat16"),
         t("compressed_kv", ["batch_size", "seq_len", "kv_lora_rank"], "bfloat16"),
         t("k_pe", ["batch_size", "seq_len", "rope_dim"], "bfloat16"),
         t("kv_norm_weight", ["kv_lora_rank"], "bfloat16"),
         t("kv_b_proj", ["kv_b_rows", "kv_lora_rank"], "bfloat16"),
         t("cos", ["seq_len", "rope_dim"], "bfloat16"), t("sin", ["seq_len", "rope_dim"], "bfloat16"),
         scalar("sm_scale", 1.0 / math.sqrt(nope + rope))],
        [out("o", ["batch_size", "seq_len", "num_heads", "v_head_dim"], "bfloat16")],
        reference, RMS_NORM, ROTATE_HALF,
        grid={"batch_size": BATCH[:4], "seq_len": SEQ[:6], **({"num_heads": [16, 32, 64, 128]} if heads_var else {})},
        small={"batch_size": 1, "seq_len": 64, **({"num_heads": 8} if heads_var else {})},
    )


def cross_attention(model: Model) -> Spec:
    q_shape = ["batch_size", "num_heads", "tgt_len", "head_dim"]
    kv_shape = ["batch_size", "num_heads", "src_len", "head_dim"]
    return model_spec(
        model, f"cross_attention_fp16_{model.key}", "attention",
        f"Decoder cross-attention of {model.key}: decoder queries attend to all {1500} encoder frames.",
        {"batch_size": VAR, "tgt_len": VAR, "src_len": 1500, "num_heads": model.heads, "head_dim": model.head_dim},
        [t("q", q_shape, "float16"), t("k", kv_shape, "float16"), t("v", kv_shape, "float16")],
        [out("out", q_shape, "float16")],
        """
            import torch
            import torch.nn.functional as F


            def run(q, k, v):
                return F.scaled_dot_product_attention(q, k, v)
        """,
        grid={"batch_size": BATCH, "tgt_len": [1, 4, 32, 128, 448]},
        small={"batch_size": 1, "tgt_len": 1},
    )


def vit_attention_block(model: Model) -> Spec:
    return model_spec(
        model, f"attention_block_fp32_{model.key}", "attention_block",
        f"{model.key} self-attention sub-block: LayerNorm, stacked q/k/v projections with bias, bidirectional SDPA "
        "over the patches, heads merged back.",
        {"batch_size": VAR, "seq_len": VAR, "hidden_size": VAR, "num_heads": model.heads, "head_dim": "hidden_size // num_heads"},
        [t("hidden_states", ["batch_size", "seq_len", "hidden_size"], "float32"),
         t("attn_norm_weight", ["hidden_size"], "float32"), t("attn_norm_bias", ["hidden_size"], "float32"),
         t("qkv_weight", [3, "hidden_size", "hidden_size"], "float32"), t("qkv_bias", [3, "hidden_size"], "float32"),
         scalar("eps", model.eps)],
        [out("context", ["batch_size", "seq_len", "hidden_size"], "float32")],
        f"""
            import torch
            import torch.nn.functional as F

            NUM_HEADS = {model.heads}


            def run(hidden_states, attn_norm_weight, attn_norm_bias, qkv_weight, qkv_bias, eps):
                batch, seq_len, hidden = hidden_states.shape
                num_heads = NUM_HEADS
                x = F.layer_norm(hidden_states, (hidden,), attn_norm_weight, attn_norm_bias, eps)
                q, k, v = (F.linear(x, qkv_weight[i], qkv_bias[i]).view(batch, seq_len, num_heads, -1).transpose(1, 2) for i in range(3))
                o = F.scaled_dot_product_attention(q, k, v)
                return o.transpose(1, 2).reshape(batch, seq_len, hidden)
        """,
        constraints=["hidden_size % num_heads == 0"],
        grid={"batch_size": BATCH, "seq_len": [197, 257, 577], "hidden_size": [model.hidden]},
        small={"batch_size": 1, "seq_len": 197, "hidden_size": 256},
    )


def attention_o_proj(model: Model) -> Spec:
    return model_spec(
        model, f"attention_o_proj_bf16_{model.key}", "attention_block",
        f"Causal GQA attention of {model.key} followed by o_proj, per tensor-parallel rank (num_qo_heads of the rank).",
        {"batch_size": VAR, "seq_len": VAR, "num_qo_heads": VAR, "num_kv_heads": VAR, "head_dim": model.head_dim,
              "hidden_size": model.hidden, "attn_dim": "num_qo_heads * head_dim"},
        [t("q", BHSD, "bfloat16"), t("k", KV_BHSD, "bfloat16"), t("v", KV_BHSD, "bfloat16"),
         t("o_proj", ["hidden_size", "attn_dim"], "bfloat16")],
        [out("out", ["batch_size", "seq_len", "hidden_size"], "bfloat16")],
        """
            import torch
            import torch.nn.functional as F


            def run(q, k, v, o_proj):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                return o.transpose(1, 2).flatten(2) @ o_proj.T
        """,
        constraints=[GQA],
        grid={"batch_size": BATCH[:4], "seq_len": SEQ[:6],
              ("num_qo_heads", "num_kv_heads"): [(model.heads // tp, model.kv_heads // tp) for tp in (1, 2, 4, 8)]},
        small={"batch_size": 1, "seq_len": 64, "num_qo_heads": 4, "num_kv_heads": 1},
    )


def problems() -> dict[str, list[Spec]]:
    return {
        "L1": [
            sdpa_prefill(LLAMA3_8B, "bfloat16", "enable_gqa"),
            sdpa_prefill(LLAMA3_70B, "float16", "enable_gqa"),
            sdpa_prefill(QWEN2_7B, "bfloat16", "repeat"),
            sdpa_prefill(VIT_LARGE, "float32", "repeat", causal=False),
            sdpa_prefill(WHISPER, "float16", "enable_gqa", causal=False),
            causal_mask_attention(LLAMA3_8B, "bfloat16"),
            autograd_backward(causal_mask_attention(QWEN2_7B, "float32"), ["q", "k", "v"], {"o": "grad_o"},
                              small={"batch_size": 1, "seq_len": 64}),
            causal_mask_attention(GEMMA2_9B, "bfloat16", window=True),
            gqa_decode(LLAMA3_8B),
            gqa_decode(LLAMA3_70B, tp=4),
            gqa_decode(MIXTRAL, dtype="float16"),
            gqa_decode(QWEN2_7B, dtype="float32"),
            additive_mask_attention(WHISPER, "float16"),
            attn_weights_value(VIT_LARGE),
        ],
        "L2": [
            causal_mask_attention(GEMMA2_9B, "bfloat16", softcap=True),
            causal_mask_attention(GEMMA2_9B, "bfloat16", softcap=True, window=True),
            text_mask_attention(CLIP_TEXT, "float16", causal=True),
            text_mask_attention(T5_XXL, "float32", causal=False),
            additive_mask_attention(BERT_LARGE, "float32"),
            mla_prefill(DEEPSEEK_V2_LITE, heads_var=False),
            mla_prefill(DEEPSEEK_V3, heads_var=True),
            cross_attention(WHISPER),
            vit_attention_block(VIT_LARGE),
            attention_o_proj(LLAMA3_8B),
            decode_with_cache_append(LLAMA3_8B),
            alibi_attention(BLOOM_7B),
            attention_backward(LLAMA3_8B, "bfloat16", causal=True),
            attention_backward(QWEN2_7B, "float32", causal=True),
            attention_backward(VIT_LARGE, "float32", causal=False),
            softcap_attention_backward(GEMMA2_9B),
        ],
        "FlashInfer-Bench": [
            paged_decode(LLAMA3_8B, 16),
            paged_decode(LLAMA3_70B, 16, tp=8),
            paged_decode(QWEN2_7B, 1),
            paged_decode(MIXTRAL, 16),
            paged_decode(QWEN3_MOE, 16),
            append_paged_kv_cache(LLAMA3_8B, 16),
            paged_decode(GEMMA2_9B, 16, softcap=True),
            paged_prefill(LLAMA3_8B, 16),
            ragged_prefill(LLAMA3_8B, padded=True),
            ragged_prefill(QWEN2_7B, padded=False),
            mla_paged_decode(DEEPSEEK_V3),
            mla_paged_decode(DEEPSEEK_V2_LITE),
            merge_states(LLAMA3_8B, "float32"),
        ],
    }
