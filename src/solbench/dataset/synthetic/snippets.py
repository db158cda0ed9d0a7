"""Helper functions that several references share (pasted into each reference's source)."""

ROTATE_HALF = """
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)
"""

RMS_NORM = """
def rms_norm(x, weight, eps):
    x32 = x.to(torch.float32)
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(x.dtype)
"""

MASKED_ATTENTION = """
def masked_attention(q, k, v, sm_scale, mask, softcap=None):
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1).to(torch.float32)
    v = v.repeat_interleave(group, dim=1).to(torch.float32)
    scores = (q.to(torch.float32) @ k.transpose(-1, -2)) * sm_scale
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
    probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return (probs @ v).to(q.dtype)
"""

REQUEST_PAGES = """
def request_pages(kv_indptr, kv_indices, kv_last_page_len, page_size, b):
    pages = kv_indices[int(kv_indptr[b]):int(kv_indptr[b + 1])].long()
    return pages, (pages.numel() - 1) * page_size + int(kv_last_page_len[b])
"""

# Builds a valid page table for every workload: each request holds at least one page, the pages
# are distinct entries of the pool, and each last page holds 1..page_size tokens.
PAGE_TABLE = """
def page_table(batch, used, pool, page_size, device, min_pages=None, min_last=None):
    pages = torch.ones(batch, dtype=torch.int64) if min_pages is None else min_pages.clone()
    spare = used - int(pages.sum())
    if spare > 0:
        pages += torch.bincount(torch.randint(0, batch, (spare,)), minlength=batch)
    last = torch.randint(1, page_size + 1, (batch,))
    if min_last is not None:
        last = torch.maximum(last, min_last)
    kv_indptr = torch.zeros(batch + 1, dtype=torch.int64)
    kv_indptr[1:] = torch.cumsum(pages, 0)
    kv_indices = torch.randperm(pool)[:used]
    return {
        "kv_indptr": kv_indptr.to(torch.int32).to(device),
        "kv_indices": kv_indices.to(torch.int32).to(device),
        "kv_last_page_len": last.to(torch.int32).to(device),
    }
"""

# Splits `total` new tokens evenly over the requests and makes a page table whose requests each hold
# at least their new tokens.
RAGGED_PAGE_TABLE = """
def ragged_page_table(axes, total, device):
    batch, page_size = axes["batch_size"], axes["page_size"]
    counts = torch.full((batch,), total // batch, dtype=torch.int64)
    counts[: total % batch] += 1
    min_pages = (counts + page_size - 1) // page_size
    made = page_table(batch, axes["num_kv_indices"], axes["num_pages"], page_size, device,
                      min_pages=min_pages, min_last=counts - (min_pages - 1) * page_size)
    return made, counts
"""

SILU_AND_MUL = """
def silu_and_mul(x):
    gate, up = x.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up
"""

# Expert-by-expert MoE: count tokens per expert, sort the (token, slot) pairs by expert, run each
# expert's GEMMs on its rows (data-dependent sizes) and scatter the weighted results back.
MOE_EXPERTS = """
def moe_experts(hidden_states, topk_ids, topk_weights, w13, w2):
    num_tokens, top_k = topk_ids.shape
    flat_ids = topk_ids.flatten()
    counts = torch.bincount(flat_ids, minlength=w13.shape[0])
    order = torch.argsort(flat_ids, stable=True)
    weights = topk_weights.flatten().to(torch.float32)
    out = torch.zeros(num_tokens, hidden_states.shape[1], dtype=torch.float32, device=hidden_states.device)
    start = 0
    for expert, count in enumerate(counts.tolist()):
        if count == 0:
            continue
        rows = order[start:start + count]
        start += count
        tokens = rows // top_k
        x = hidden_states[tokens].to(torch.float32)
        gate, up = (x @ w13[expert].to(torch.float32).T).chunk(2, dim=-1)
        y = (torch.nn.functional.silu(gate) * up) @ w2[expert].to(torch.float32).T
        out.index_add_(0, tokens, y * weights[rows, None])
    return out.to(hidden_states.dtype)
"""

DISTINCT_TOPK = """
def distinct_topk(num_tokens, num_experts, top_k, device):
    return torch.rand(num_tokens, num_experts).argsort(dim=-1)[:, :top_k].to(device)
"""

# Decode attention in fp32 with the query heads grouped over their kv head (k and v: [batch, kv_len, kv_heads, head_dim]).
GQA_DECODE = """
def gqa_decode(q, k, v, sm_scale):
    batch, num_heads, head_dim = q.shape
    num_kv_heads = k.shape[2]
    qg = q.to(torch.float32).view(batch, num_kv_heads, num_heads // num_kv_heads, head_dim)
    probs = torch.softmax(torch.einsum("bhgd,bshd->bhgs", qg, k) * sm_scale, dim=-1)
    return torch.einsum("bhgs,bshd->bhgd", probs, v).reshape(batch, num_heads, head_dim).to(q.dtype)
"""

# Causal attention over a packed batch, one SDPA per sequence (cu_seqlens: its boundaries, read with int()).
PER_SEQUENCE_ATTENTION = """
def attention_per_sequence(q, k, v, cu_seqlens, sm_scale):
    out = torch.empty_like(q)
    for b in range(cu_seqlens.numel() - 1):
        start, end = int(cu_seqlens[b]), int(cu_seqlens[b + 1])
        qb, kb, vb = (x[start:end].transpose(0, 1)[None] for x in (q, k, v))
        o = F.scaled_dot_product_attention(qb, kb, vb, is_causal=True, scale=sm_scale, enable_gqa=True)
        out[start:end] = o[0].transpose(0, 1)
    return out
"""
