"""Variable-length (packed) prefill attention: sequences of different lengths packed one after the
other along a single row of tokens, as FlashAttention's varlen kernels and vLLM's prefill take them.

The problem's inputs are the packed hidden states [1, seq_len, hidden] (seq_len: all the tokens of
the pack), the cos/sin of each token's position in its own sequence, and `seq_lens` [batch_size]
int32 (the sequences' lengths, summing to seq_len). The reference builds cu_seqlens (their running
sum), each token's position in its sequence, and from those positions the model's own packed causal
mask (transformers' packed-sequence detection: a token sees the earlier tokens of its sequence only),
then runs the model's attention module. The lengths are not drawn: they are fixed ratios of the
axes (the same at every seed), so the speed-of-light analysis sees the very mask that is timed and
prices the pairs it keeps.
"""

from __future__ import annotations

from typing import Any

from solbench.dataset.extract.recipe import BATCH, SEQ, UNIT, Act, Recipe

# (sequences, packed tokens), as a chunked prefill packs them; at most 4096 tokens, so that the speed-of-light
# analysis can compute the [tokens, tokens] mask (and the masks it is built from) and price the pairs it keeps
VARLEN_GRID = ((2, 256), (4, 1024), (8, 1024), (8, 2048), (2, 4096), (16, 4096), (32, 4096), (64, 4096))

MAKE_INPUTS = '''
def make_inputs(axes, device):
    """The lengths of batch_size sequences packed into seq_len tokens: one token each, the rest shared
    in the fixed ratios (7 * i) % 5 + 1 (1 to 5; no random draw), the rounding remainder on the last one."""
    batch, total = axes["batch_size"], axes["seq_len"]
    if total < batch:
        raise ValueError(f"seq_len ({total}) must be at least batch_size ({batch}): every sequence needs a token")
    weights = torch.tensor([(7 * i) % 5 + 1 for i in range(batch)], dtype=torch.int64)
    lengths = 1 + (total - batch) * weights // weights.sum()
    lengths[-1] += total - lengths.sum()
    return {"seq_lens": lengths.to(torch.int32).to(device)}
'''


def packed_positions(seq_lens: Any, tokens: int) -> Any:
    """Each packed token's position within its own sequence: cu_seqlens (the running sum of the
    lengths) tells where each sequence starts."""
    import torch

    lengths = seq_lens.to(torch.int64)
    cu_seqlens = torch.cumsum(lengths, 0)  # the end of each sequence (FlashAttention's cu_seqlens without the leading 0)
    token = torch.arange(tokens, device=seq_lens.device)
    sequence = torch.searchsorted(cu_seqlens, token, right=True)  # the sequence each token belongs to
    return token - (cu_seqlens - lengths)[sequence]


def _varlen_call(tm: Any, cfg: Any, module: Any, hidden_states: Any, cos: Any, sin: Any, seq_lens: Any) -> Any:
    from transformers.masking_utils import create_causal_mask

    positions = packed_positions(seq_lens, hidden_states.shape[1]).unsqueeze(0)
    mask = create_causal_mask(config=cfg, inputs_embeds=hidden_states, attention_mask=None, cache=None, position_ids=positions)
    return module(hidden_states, (cos, sin), mask)[0]


def varlen_recipe(build: Any, qk: str = "") -> Recipe:
    """The packed prefill recipe of a decoder family whose attention module `build(tm, cfg)` makes."""
    return Recipe(
        "attention_varlen", "attention_varlen",
        f"variable-length (packed) causal prefill self-attention{qk}: batch_size sequences of different lengths packed along "
        "one row of seq_len tokens (hidden_states [1, seq_len, hidden]; seq_lens int32 [batch_size], summing to seq_len); "
        "cu_seqlens and each token's position in its sequence are computed from seq_lens, and the model's own packed causal "
        "mask from those positions (a token attends to the earlier tokens of its own sequence only); q/k/v projections, "
        "RoPE from the given cos/sin, grouped-query scaled dot-product attention with that mask and the output projection",
        build, _varlen_call,
        (Act("hidden_states", (1, SEQ, "hidden_size")), Act("cos", (1, SEQ, "head_dim"), distribution=UNIT),
         Act("sin", (1, SEQ, "head_dim"), distribution=UNIT), Act("seq_lens", (BATCH,), "int32", custom=True)),
        grid=VARLEN_GRID, custom=MAKE_INPUTS, no_grad=("cos", "sin"))
