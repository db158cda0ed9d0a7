"""Qwen2.5-Omni's Token2Wav DiT: the extracted DiT block (adaLN-Zero, first-head RoPE, the block mask built in the
reference), the adaLN-Zero modulation and the time-step embedding compute what transformers' own modules compute
(shrunk config, fp32 and bf16, forward and backward); the block mask is local as the model's block_size says; the
full-size problems take their axes from the config, validate and price with no uncovered op."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from solbench.cli import app  # noqa: E402
from solbench.data.loaders import load_problems  # noqa: E402
from solbench.data.reference import reference_module  # noqa: E402
from solbench.dataset.extract.api import build_problem  # noqa: E402
from solbench.dataset.extract.capture import readable, transformers_config  # noqa: E402
from solbench.dataset.extract.configs import MODELS  # noqa: E402
from solbench.dataset.extract.modules import FAMILIES  # noqa: E402
from solbench.dataset.extract.writer import write_problem  # noqa: E402

from extract_testkit import tiny_problem  # noqa: E402

runner = CliRunner()
MODEL = "qwen2_5_omni_dit"
BATCH, SEQ = 2, 14  # 14 frames: blocks of 4 (the shrunk block_size), the last one partial
BLOCKS = {"dit_block": (0, 0), "dit_block_look_ahead": (1, 0), "dit_block_look_backward": (0, 1)}  # (look ahead, look backward)
TOLERANCES = [(torch.float32, 1e-4), (torch.bfloat16, 2e-2)]


def _problem(tmp_path: Path, module: str, dtype: torch.dtype, backward: bool = False):
    """(problem in dtype, real module in dtype with the testkit's seeded weights, shrunk config)."""
    _, _, problem, real, config = tiny_problem(tmp_path, MODEL, module, backward)
    if dtype != torch.float32:
        name = f"tiny_{MODEL}_{module}_{dtype}".replace("torch.", "")
        definition, lines = build_problem(MODELS[MODEL], FAMILIES[MODEL].recipes[module], backward, name,
                                          dtype=str(dtype).removeprefix("torch."), tiny=True)
        write_problem(tmp_path / name, definition, lines)
        [problem] = load_problems([tmp_path / name])
        real = copy.deepcopy(real).to(dtype)
    return problem, real, config


def _weights(problem, module: torch.nn.Module) -> list[torch.Tensor]:
    """The module's parameters in the order (and under the names) of the problem's weight inputs."""
    state = {readable(n): p for n, p in module.named_parameters()}
    return [state[name].detach() for name in problem.definition.inputs if name in state]


def _block_acts(config, dtype: torch.dtype, batch: int = BATCH, seq: int = SEQ) -> list[torch.Tensor]:
    """Frames, a time embedding, and cos/sin from the model's own DiT rotary embedding at positions 0..seq-1."""
    tm = FAMILIES[MODEL].transformers_module()
    hidden = torch.randn(batch, seq, config.hidden_size)
    time = torch.randn(batch, config.hidden_size)
    positions = torch.arange(seq)[None].repeat(batch, 1)
    cos, sin = tm.Qwen2_5OmniDiTRotaryEmbedding(config)(hidden, positions)
    return [t.to(dtype) for t in (hidden, time, cos, sin)]


def _block_diff(config, batch: int, seq: int) -> torch.Tensor:
    """Block index of the key minus that of the query, [batch, heads, seq, seq], written here by hand."""
    blocks = torch.arange(seq) // config.block_size
    return (blocks[None, :] - blocks[:, None]).expand(batch, config.num_attention_heads, seq, seq)


def _own_block(layer, config, hidden, time, cos, sin) -> torch.Tensor:
    return layer(hidden, time, position_embeddings=(cos, sin), block_diff=_block_diff(config, hidden.shape[0], hidden.shape[1]))


def _close(got: torch.Tensor, expected: torch.Tensor, tol: float) -> None:
    assert got.shape == expected.shape and got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, atol=tol * max(expected.abs().max().item(), 1.0), rtol=tol)


def test_layers_are_built_as_the_model_builds_them(tmp_path):
    config = transformers_config(MODELS[MODEL])
    assert (config.hidden_size, config.num_attention_heads, config.head_dim, config.block_size) == (1024, 16, 64, 24)
    assert config._attn_implementation == "sdpa"
    for module, (ahead, backward) in BLOCKS.items():
        _, recipe, problem, real, _ = tiny_problem(tmp_path, MODEL, module)
        assert type(real).__name__ == "DiTDecoderLayer" and (real.look_ahead_block, real.look_backward_block) == (ahead, backward)
        reference = problem.definition.reference
        assert "scaled_dot_product_attention" in reference and "floor_divide" in reference  # the block mask is made in the reference
        assert list(problem.definition.inputs)[:4] == ["hidden_states", "time_embedding", "cos", "sin"]
        assert "transformers" not in reference and problem.definition.op_type == "dit_block"


@pytest.mark.parametrize("dtype, tol", TOLERANCES)
@pytest.mark.parametrize("module", list(BLOCKS))
def test_block_matches_transformers_layer(tmp_path, module, dtype, tol):
    problem, real, config = _problem(tmp_path, module, dtype)
    torch.manual_seed(1)
    acts = _block_acts(config, dtype)
    with torch.no_grad():
        expected = _own_block(real, config, *acts)
    got = reference_module(problem.definition).run(*acts, *_weights(problem, real))
    _close(got, expected, tol)


def test_block_mask_is_local_to_the_blocks(tmp_path):
    """Changing the frames of the third block (8..11; blocks of 4) changes exactly the frames that see it: that block in
    a plain layer, also the second block (4..7) with look-ahead, also the partial last block (12..13) with look-backward."""
    torch.manual_seed(2)
    _, _, _, _, config = tiny_problem(tmp_path, MODEL, "dit_block")
    acts = _block_acts(config, torch.float32)
    changed = acts[0].clone()
    changed[:, 8:12] += torch.randn_like(changed[:, 8:12])
    blind = {"dit_block": [0, 1, 2, 3, 4, 5, 6, 7, 12, 13], "dit_block_look_ahead": [0, 1, 2, 3, 12, 13],
             "dit_block_look_backward": [0, 1, 2, 3, 4, 5, 6, 7]}
    for module, frames in blind.items():
        _, _, problem, real, _ = tiny_problem(tmp_path, MODEL, module)
        run = reference_module(problem.definition).run
        before, after = run(*acts, *_weights(problem, real)), run(changed, *acts[1:], *_weights(problem, real))
        seeing = [i for i in range(SEQ) if i not in frames]
        torch.testing.assert_close(after[:, frames], before[:, frames], atol=1e-5, rtol=1e-5)
        assert ((after - before)[:, seeing].abs().amax(dim=(0, 2)) > 1e-3).all(), module


def test_block_backward_matches_autograd(tmp_path):
    _, _, problem, real, config = tiny_problem(tmp_path, MODEL, "dit_block_look_backward", backward=True)
    torch.manual_seed(3)
    hidden, time, cos, sin = _block_acts(config, torch.float32)
    hidden.requires_grad_(True)
    time.requires_grad_(True)
    weights = [p for _, p in real.named_parameters()]
    out = _own_block(real, config, hidden, time, cos, sin)
    grad = torch.randn_like(out)
    expected = torch.autograd.grad(out, [hidden, time, *weights], grad)
    got = reference_module(problem.definition).run(hidden.detach(), time.detach(), cos, sin, *_weights(problem, real), grad)
    names = list(problem.definition.outputs)
    assert names[:2] == ["grad_hidden_states", "grad_time_embedding"] and "grad_cos" not in names and len(got) == len(expected)
    for g, e in zip(got, expected):
        _close(g, e, 1e-4)


@pytest.mark.parametrize("dtype, tol", TOLERANCES)
def test_adaln_matches_transformers_module(tmp_path, dtype, tol):
    problem, real, config = _problem(tmp_path, "adaln", dtype)
    assert type(real).__name__ == "Qwen2_5_OmniAdaLayerNormZero" and problem.definition.op_type == "norm"
    torch.manual_seed(4)
    hidden, time = (torch.randn(BATCH, SEQ, config.hidden_size) * 3 + 1).to(dtype), torch.randn(BATCH, config.hidden_size).to(dtype)
    with torch.no_grad():
        expected = real(hidden, emb=time)
    got = reference_module(problem.definition).run(hidden, time, *_weights(problem, real))
    assert list(problem.definition.outputs) == ["modulated", "gate_msa", "shift_mlp", "scale_mlp", "gate_mlp"]
    for g, e in zip(got, expected):
        _close(g, e, tol)


def test_adaln_backward_matches_autograd(tmp_path):
    _, _, problem, real, config = tiny_problem(tmp_path, MODEL, "adaln", backward=True)
    torch.manual_seed(5)
    hidden = torch.randn(BATCH, SEQ, config.hidden_size, requires_grad=True)
    time = torch.randn(BATCH, config.hidden_size, requires_grad=True)
    outs = real(hidden, emb=time)
    grads = [torch.randn_like(o) for o in outs]
    expected = torch.autograd.grad(outs, [hidden, time, *real.parameters()], grads)
    got = reference_module(problem.definition).run(hidden.detach(), time.detach(), *_weights(problem, real), *grads)
    assert len(got) == len(expected) == 4
    for g, e in zip(got, expected):
        _close(g, e, 1e-4)


@pytest.mark.parametrize("dtype, tol", TOLERANCES)
def test_timestep_embedding_matches_transformers_module(tmp_path, dtype, tol):
    problem, real, config = _problem(tmp_path, "timestep_embedding", dtype)
    timestep = torch.tensor([0.0, 0.03, 0.5, 1.0]).to(dtype)  # flow-matching times
    with torch.no_grad():
        expected = real(timestep)
    got = reference_module(problem.definition).run(timestep, *_weights(problem, real))
    assert got.shape == (4, config.hidden_size)
    _close(got, expected, tol)
    back, real, _ = _problem(tmp_path, "timestep_embedding", torch.float32, backward=True)
    out = real(timestep.float())
    grad = torch.randn_like(out)
    expected_grads = torch.autograd.grad(out, list(real.parameters()), grad)
    got_grads = reference_module(back.definition).run(timestep.float(), *_weights(back, real), grad)
    assert "grad_timestep" not in back.definition.outputs and len(got_grads) == len(expected_grads)
    for g, e in zip(got_grads, expected_grads):
        _close(g, e, 1e-4)


def test_tiny_problems_validate(tmp_path):
    for module in FAMILIES[MODEL].recipes:
        tiny_problem(tmp_path, MODEL, module)
    tiny_problem(tmp_path, MODEL, "dit_block", backward=True)
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "did not run" not in result.output and "degenerate:" not in result.output


@pytest.fixture(scope="module")
def full_size(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dit")
    result = runner.invoke(app, ["dataset", "extract", MODEL, "--modules", "dit_block,adaln,timestep_embedding", "--backward",
                                 "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_full_size_axes_come_from_the_config(full_size):
    problems = {p.name: p for p in load_problems([full_size])}
    assert set(problems) == {f"{MODEL}_{m}{s}" for m in ("dit_block", "adaln", "timestep_embedding") for s in ("", "_backward")}
    block = problems[f"{MODEL}_dit_block"].definition
    assert block.hf_id == "Qwen/Qwen2.5-Omni-7B" and block.inputs["hidden_states"].dtype.value == "float32"
    assert block.axes["hidden_size"].value == 1024 and block.axes["head_dim"].value == 64
    assert block.axes["intermediate_size"].value == 2048 and block.axes["modulation_dim"].expression == "6 * hidden_size"
    assert block.inputs["attn_norm_linear_weight"].shape == ["modulation_dim", "hidden_size"]
    assert block.inputs["ff_ff_0_weight"].shape == ["intermediate_size", "hidden_size"]
    assert "floor_divide.default(arange, 24)" in block.reference  # block_size 24
    assert problems[f"{MODEL}_timestep_embedding"].definition.inputs["time_mlp_0_weight"].shape == ["hidden_size", "freq_embed_dim"]
    for name, problem in problems.items():
        sizes = [(w.axes["batch_size"], w.axes.get("seq_len")) for w in problem.workloads]
        if "timestep" in name:
            assert [b for b, _ in sizes] == [1, 2, 4, 8, 16, 32, 64]
        else:
            assert sizes[0] == (1, 480) and len(sizes) == 8 and all(b <= 8 and 480 <= s <= 3000 for b, s in sizes)


def test_full_size_validates_and_prices_every_op(full_size):
    result = runner.invoke(app, ["validate", str(full_size)])
    assert result.exit_code == 0, result.output
    assert "did not run" not in result.output and "degenerate:" not in result.output
    for folder in sorted(full_size.iterdir()):
        result = runner.invoke(app, ["sol", str(folder), "--json", "-j", "1"])
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
        assert len(rows) == len(load_problems([folder])[0].workloads)
        assert all(row["uncovered_ops"] == [] for row in rows), (folder.name, {op for row in rows for op in row["uncovered_ops"]})
