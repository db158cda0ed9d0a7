"""Packed (varlen) prefill attention: the extracted reference computes what transformers' own
LlamaAttention computes with a block-diagonal causal mask written here by hand, forward and backward
(shrunk config); its lengths are fixed by the axes (no random draw) and sum to the packed tokens."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from solbench.data.inputs import generate_inputs  # noqa: E402
from solbench.data.reference import reference_module  # noqa: E402
from solbench.dataset.extract.capture import state_of  # noqa: E402
from solbench.dataset.extract.varlen import packed_positions  # noqa: E402

from extract_testkit import tiny_problem  # noqa: E402

LENGTHS = [3, 7, 1, 5]  # 16 packed tokens
TOKENS = sum(LENGTHS)


def _block_causal_mask(lengths: list[int]) -> torch.Tensor:
    """[1, 1, T, T] bool: query i sees key j when both are in one sequence and j <= i."""
    sequence = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    token = torch.arange(sum(lengths))
    return ((sequence[:, None] == sequence[None, :]) & (token[None, :] <= token[:, None]))[None, None]


def _inputs(config, seed: int) -> list[torch.Tensor]:
    torch.manual_seed(seed)
    head_dim = config.hidden_size // config.num_attention_heads if not getattr(config, "head_dim", None) else config.head_dim
    angles = torch.rand(1, TOKENS, head_dim) * 3.0
    return [torch.randn(1, TOKENS, config.hidden_size), angles.cos(), angles.sin()]


def test_packed_positions_restart_in_each_sequence():
    assert packed_positions(torch.tensor(LENGTHS, dtype=torch.int32), TOKENS).tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 5, 6, 0, 0, 1, 2, 3, 4]


def test_varlen_matches_llama_attention_with_a_block_causal_mask(tmp_path):
    _, _, problem, real, config = tiny_problem(tmp_path, "llama3_8b", "attention_varlen")
    hidden, cos, sin = _inputs(config, 1)
    seq_lens = torch.tensor(LENGTHS, dtype=torch.int32)
    with torch.no_grad():
        expected = real(hidden, (cos, sin), _block_causal_mask(LENGTHS))[0]
        plain_causal = real(hidden, (cos, sin), _block_causal_mask([TOKENS]))[0]
    weights = [p.detach() for _, p in state_of(real)]
    got = reference_module(problem.definition).run(hidden, cos, sin, seq_lens, *weights)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert (got[:, 3:] - plain_causal[:, 3:]).abs().max() > 1e-3  # the later sequences do not see the earlier ones
    torch.testing.assert_close(got[:, :3], plain_causal[:, :3], atol=1e-5, rtol=1e-5)


def test_varlen_backward_matches_autograd(tmp_path):
    _, _, problem, real, config = tiny_problem(tmp_path, "llama3_8b", "attention_varlen", backward=True)
    hidden, cos, sin = _inputs(config, 2)
    hidden.requires_grad_(True)
    weights = [p for _, p in state_of(real)]
    out = real(hidden, (cos, sin), _block_causal_mask(LENGTHS))[0]
    grad_out = torch.randn_like(out)
    expected = torch.autograd.grad(out, [hidden, *weights], grad_out)
    names = list(problem.definition.inputs)
    values = {"hidden_states": hidden.detach(), "cos": cos, "sin": sin, "seq_lens": torch.tensor(LENGTHS, dtype=torch.int32)}
    values.update({name: w.detach() for name, w in zip(names[4:], weights)})
    got = reference_module(problem.definition).run(*[values.get(name, grad_out) for name in names])
    got = got if isinstance(got, (tuple, list)) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)


def test_the_lengths_are_the_same_at_every_seed_and_fill_the_pack(tmp_path):
    _, _, problem, _, _ = tiny_problem(tmp_path, "llama3_8b", "attention_varlen")
    for workload in problem.workloads:
        axes = problem.axes(workload)
        first = generate_inputs(problem, workload, seed=0, device="cpu", only={"seq_lens"})["seq_lens"]
        again = generate_inputs(problem, workload, seed=7, device="cpu", only={"seq_lens"})["seq_lens"]
        assert torch.equal(first, again)
        assert first.shape == (axes["batch_size"],) and int(first.sum()) == axes["seq_len"] and int(first.min()) >= 1
