"""A deterministic generator of a synthetic dataset in the public SOL-ExecBench layout.

`generate_dataset(out_dir, problems=241, seed=0)` writes `out_dir/<subset>/<NNN_name>/definition.json`
and `workload.jsonl` for the subsets L1 (single ops), L2 (small fusions), Quant (fp8/fp4) and
FlashInfer-Bench (paged/ragged attention, MoE, sampling-like ops), with model shapes of Llama-3,
Qwen, Mixtral, DeepSeek, Gemma, ViT, Whisper and Mamba, and the conventions of the public data
(digit-string literal dims, scalar inputs, packed fp4, optional and aliased tolerances, custom
index inputs). Every problem has one small workload that runs on a CPU. The default 241 problems are every
template once: as many as the public set's 235, and 6 of the kinds whose SOL analysis was slowest there
(nvfp4 attention, linear, MLP and decoder layer; YaRN and dual-RoPE attention). The command line is
`python3 -m solbench.dataset.synthetic OUT_DIR [--problems N] [--seed S] [--force]`.

Deliberate data quirks (as in the public set): some workload lines of these problems name an axis
or an input that the definition does not have (names as in the default 241-problem set):

- 069_rope_cached_positions_bf16_llama3_70b: extra input `rope_theta`
- 093_moe_router_topk_bf16_mixtral_8x7b: extra axis `num_expert_groups`
- 208_paged_decode_bf16_llama3_70b_ps16_tp8: extra axis `max_num_pages`
"""

from solbench.dataset.synthetic.generate import QUIRKS, SUBSETS, generate_dataset

__all__ = ["QUIRKS", "SUBSETS", "generate_dataset"]
