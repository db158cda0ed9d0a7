"""Decode attention recipes: one new token per sequence attending over a KV cache.

`attention_decode` hands the model's own attention module a cache object of the transformers Cache
interface whose update appends the new (rotated) key and value to the given k_cache/v_cache.
`attention_paged_decode` reads the cache from a paged pool instead (paged layout as in
vLLM/FlashInfer: transformers has no paged decode path of its own, so the pool is read through a
paging cache object around the same attention module): each sequence's pages come from its row of
the page table, and only its first seq_lens[b] cached tokens are attended to (a boolean mask).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

from solbench.dataset.extract.recipe import BATCH, KV, PAGES, POOL, UNIT, Act, Recipe

PAGE_SIZE = 16
GQA_SWITCH = "TRANSFORMERS_SDPA_FORCE_GQA"
# (batch, cached tokens): kv_len from 128 to 8192, batch from 1 to 64
DECODE_GRID = ((1, 128), (1, 1024), (8, 1024), (1, 8192), (16, 2048), (64, 512), (32, 4096), (64, 8192))

MAKE_INPUTS = '''
def make_inputs(axes, device):
    """A valid page table: each sequence owns pages_per_seq distinct pages of the pool, in a random
    order, and holds (pages_per_seq - 1) * page_size + 1 .. pages_per_seq * page_size cached tokens
    (its last page partly filled), so every page of its row is read."""
    batch, pages, page_size = axes["batch_size"], axes["pages_per_seq"], axes["page_size"]
    page_table = torch.randperm(axes["num_pages"])[: batch * pages].view(batch, pages)
    seq_lens = (pages - 1) * page_size + torch.randint(1, page_size + 1, (batch,))
    return {"page_table": page_table.to(torch.int32).to(device), "seq_lens": seq_lens.to(torch.int32).to(device)}
'''


class AppendedCache:
    """The Cache interface as the attention modules call it: the new token's key/value appended to given tensors."""

    def __init__(self, k_cache: Any, v_cache: Any) -> None:
        self.k_cache, self.v_cache = k_cache, v_cache

    def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        import torch

        return torch.cat([self.k_cache, key_states], dim=2), torch.cat([self.v_cache, value_states], dim=2)


class PagedCache:
    """The Cache interface over a paged pool [num_pages, page_size, kv_heads, head_dim]: each sequence's
    pages gathered in page-table order, then the new token's key/value appended."""

    def __init__(self, k_pages: Any, v_pages: Any, page_table: Any) -> None:
        self.k_pages, self.v_pages, self.page_table = k_pages, v_pages, page_table

    def _gathered(self, pages: Any, new: Any) -> Any:
        import torch

        batch, kv_heads, _, head_dim = new.shape
        cached = pages[self.page_table.long()].reshape(batch, -1, kv_heads, head_dim)
        return torch.cat([cached, new.transpose(1, 2)], dim=1).transpose(1, 2)

    def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        return self._gathered(self.k_pages, key_states), self._gathered(self.v_pages, value_states)


def _decode_call(tm: Any, cfg: Any, module: Any, hidden_states: Any, cos: Any, sin: Any, k_cache: Any, v_cache: Any) -> Any:
    return module(hidden_states, (cos, sin), None, cache=AppendedCache(k_cache, v_cache))[0]


def paged_mask(page_table: Any, seq_lens: Any, page_size: int) -> Any:
    """[batch, 1, 1, pages_per_seq * page_size + 1] bool: the first seq_lens[b] cached tokens and the new one."""
    import torch

    batch, pages = page_table.shape
    cached = torch.arange(pages * page_size, device=page_table.device).unsqueeze(0) < seq_lens.unsqueeze(1)
    new = torch.ones(batch, 1, dtype=torch.bool, device=page_table.device)
    return torch.cat([cached, new], dim=1)[:, None, None, :]


def _paged_call(tm: Any, cfg: Any, module: Any, hidden_states: Any, cos: Any, sin: Any, k_pages: Any, v_pages: Any,
                page_table: Any, seq_lens: Any) -> Any:
    mask = paged_mask(page_table, seq_lens, k_pages.shape[1])
    with grouped_sdpa():
        return module(hidden_states, (cos, sin), mask, cache=PagedCache(k_pages, v_pages, page_table))[0]


@contextlib.contextmanager
def grouped_sdpa() -> Iterator[None]:
    """transformers' own switch for SDPA's grouped-query mode with a mask (enable_gqa, no repeat_kv copy of the
    keys; the copy's symbolic strides also defeat torch.export)."""
    previous = os.environ.get(GQA_SWITCH)
    os.environ[GQA_SWITCH] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ[GQA_SWITCH]
        else:
            os.environ[GQA_SWITCH] = previous


def _step_acts() -> tuple[Act, ...]:
    return (Act("hidden_states", (BATCH, 1, "hidden_size")), Act("cos", (BATCH, 1, "head_dim"), distribution=UNIT),
            Act("sin", (BATCH, 1, "head_dim"), distribution=UNIT))


def decode_recipes(build: Any, qk: str, attention_summary: str = "") -> dict[str, Recipe]:
    """The two decode recipes of a family whose attention module `build(tm, cfg)` makes."""
    extra = f"; {attention_summary}" if attention_summary else ""
    cache = (BATCH, "num_kv_heads", KV, "head_dim")
    pages = (POOL, "page_size", "num_kv_heads", "head_dim")
    decode = Recipe(
        "attention_decode", "attention_decode",
        f"decode self-attention{qk}: one new token per sequence (seq 1) attending over a KV cache of kv_len tokens "
        "(k_cache/v_cache [batch, num_kv_heads, kv_len, head_dim]) and itself: q/k/v projections of the new token, RoPE "
        "from the given cos/sin on the new q and k, the new key/value appended to the cache (not written back), grouped-"
        f"query scaled dot-product attention and the output projection{extra}",
        build, _decode_call, (*_step_acts(), Act("k_cache", cache), Act("v_cache", cache)),
        second=KV, grid=DECODE_GRID, no_grad=("cos", "sin"))
    paged = Recipe(
        "attention_paged_decode", "attention_paged_decode",
        f"decode self-attention{qk} over a paged KV cache (paged layout as in vLLM/FlashInfer; transformers has no paged "
        "decode path, so the model's attention module reads the pool through a paging cache object): one new token per "
        f"sequence; k_pages/v_pages [num_pages, {PAGE_SIZE}, num_kv_heads, head_dim] pool, page_table int32 [batch, "
        "pages_per_seq] (the pool pages of each sequence, in order), seq_lens int32 [batch] (its cached tokens, all of "
        "its pages in use); q/k/v projections, RoPE from the given cos/sin on the new q and k, attention over the first "
        "seq_lens[b] cached tokens and the new token (its key/value are not written into the pool), grouped-query "
        f"scaled dot-product attention and the output projection{extra}",
        build, _paged_call,
        (*_step_acts(), Act("k_pages", pages), Act("v_pages", pages), Act("page_table", (BATCH, PAGES), "int32", custom=True),
         Act("seq_lens", (BATCH,), "int32", custom=True)),
        backward=False, second=PAGES, step=PAGE_SIZE, grid=DECODE_GRID,
        axes=(("page_size", PAGE_SIZE), (POOL, f"{BATCH} * {PAGES}")), custom=MAKE_INPUTS)
    return {decode.module: decode, paged.module: paged}
