"""Decode attention: the extracted reference computes what the real transformers attention module computes
with its own DynamicCache holding the cached keys/values (shrunk configs, fp32); the paged variant equals the
contiguous decode of each sequence's gathered pages; the full-size problems validate and price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from solbench.cli import app  # noqa: E402
from solbench.data.inputs import generate_inputs  # noqa: E402
from solbench.data.loaders import load_problems  # noqa: E402
from solbench.data.reference import reference_module  # noqa: E402
from solbench.dataset.extract.capture import state_of  # noqa: E402

from extract_testkit import tiny_problem  # noqa: E402

runner = CliRunner()
BATCH, KV_LEN = 3, 21


def _tiny(tmp_path: Path, model_name: str, module: str):
    _, _, problem, real, config = tiny_problem(tmp_path, model_name, module)
    return problem, real, config


def _real_decode(real, config, hidden, cos, sin, k_cache, v_cache):
    """The transformers module with its own cache, prefilled with the given keys/values."""
    cache = transformers.DynamicCache(config=config)
    cache.update(k_cache, v_cache, real.layer_idx)
    with torch.no_grad():
        return real(hidden, (cos, sin), None, cache=cache)[0]


def _step(config, batch):
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    angles = torch.rand(batch, 1, head_dim) * 6.0
    return torch.randn(batch, 1, config.hidden_size), angles.cos(), angles.sin()


@pytest.mark.parametrize("model_name", ["llama3_8b", "qwen3_8b", "gemma3_27b"])
def test_decode_matches_module_with_its_cache(tmp_path, model_name):
    problem, real, config = _tiny(tmp_path, model_name, "attention_decode")
    assert problem.definition.inputs["k_cache"].shape == ["batch_size", "num_kv_heads", "kv_len", "head_dim"]
    assert problem.definition.axes["kv_len"].type == "var"
    hidden, cos, sin = _step(config, BATCH)
    k_cache = torch.randn(BATCH, config.num_key_value_heads, KV_LEN, 16)
    v_cache = torch.randn(BATCH, config.num_key_value_heads, KV_LEN, 16)
    expected = _real_decode(real, config, hidden, cos, sin, k_cache, v_cache)
    weights = [p.detach() for _, p in state_of(real)]
    got = reference_module(problem.definition).run(hidden, cos, sin, k_cache, v_cache, *weights)
    assert got.shape == (BATCH, 1, config.hidden_size)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    cut = reference_module(problem.definition).run(hidden, cos, sin, k_cache[:, :, :5], v_cache[:, :, :5], *weights)
    assert (cut - got).abs().max() > 1e-3  # the cache matters


def test_paged_decode_equals_decode_of_gathered_pages(tmp_path):
    problem, real, config = _tiny(tmp_path, "llama3_8b", "attention_paged_decode")
    definition = problem.definition
    assert definition.custom_inputs_entrypoint == "make_inputs"
    assert definition.axes["num_pages"].expression == "batch_size * pages_per_seq"
    assert "vLLM/FlashInfer" in definition.description
    workload = problem.workloads[0].model_copy(update={"axes": {"batch_size": BATCH, "pages_per_seq": 3}})
    values = generate_inputs(problem, workload, seed=1)
    page_table, seq_lens = values["page_table"], values["seq_lens"]
    assert page_table.dtype == torch.int32 and seq_lens.dtype == torch.int32
    assert sorted(page_table.flatten().tolist()) == list(range(BATCH * 3))  # distinct pages of the pool
    assert all(2 * 16 < n <= 3 * 16 for n in seq_lens.tolist())  # every page of a row in use
    hidden, cos, sin = _step(config, BATCH)
    k_pages, v_pages = torch.randn(BATCH * 3, 16, 2, 16), torch.randn(BATCH * 3, 16, 2, 16)
    weights = [p.detach() for _, p in state_of(real)]
    got = reference_module(definition).run(hidden, cos, sin, k_pages, v_pages, page_table, seq_lens, *weights)
    for b in range(BATCH):
        rows = page_table[b].long()
        n = int(seq_lens[b])
        k = k_pages[rows].flatten(0, 1)[:n].transpose(0, 1).unsqueeze(0)
        v = v_pages[rows].flatten(0, 1)[:n].transpose(0, 1).unsqueeze(0)
        expected = _real_decode(real, config, hidden[b:b + 1], cos[b:b + 1], sin[b:b + 1], k, v)
        torch.testing.assert_close(got[b:b + 1], expected, atol=1e-5, rtol=1e-5)


def test_full_size_decode_problems_validate_and_price(tmp_path):
    result = runner.invoke(app, ["dataset", "extract", "mixtral_8x7b", "--modules", "attention_decode,attention_paged_decode", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    problems = {p.name: p for p in load_problems([tmp_path])}
    decode = problems["mixtral_8x7b_attention_decode"]
    sizes = [(w.axes["batch_size"], w.axes["kv_len"]) for w in decode.workloads]
    assert sizes[0] == (1, 128) and (64, 8192) in sizes and all(1 <= b <= 64 and 128 <= s <= 8192 for b, s in sizes)
    paged = problems["mixtral_8x7b_attention_paged_decode"]
    assert [w.axes["pages_per_seq"] * 16 for w in paged.workloads] == [s for _, s in sizes]
    assert all(w.inputs["page_table"].type == "custom" for w in paged.workloads)
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    fused = {}
    for name in problems:
        result = runner.invoke(app, ["sol", str(tmp_path / name), "--json", "-j", "1"])
        rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
        assert len(rows) == 8 and all(row["uncovered_ops"] == [] for row in rows), result.output
        fused[name] = [row["bytes_fused"] for row in rows]
    cache = 2 * 8 * 128 * 2  # k and v bytes per cached token
    assert fused["mixtral_8x7b_attention_decode"][0] >= 128 * cache  # the whole cache is read
    paged_bytes, decode_bytes = fused["mixtral_8x7b_attention_paged_decode"], fused["mixtral_8x7b_attention_decode"]
    assert all(abs(p - d) / d < 0.01 for p, d in zip(paged_bytes, decode_bytes))  # the pages read once, as the contiguous cache


def test_paged_decode_extracts_byte_identical(tmp_path):
    for folder in ("a", "b"):
        result = runner.invoke(app, ["dataset", "extract", "qwen3_8b", "--modules", "attention_paged_decode,rope_apply", "--backward",
                                     "-o", str(tmp_path / folder)])
        assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 6  # paged decode has no backward; rope_apply has one
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
