"""Convolution blocks, expert-parallel MoE, --dtype variants and the hand-written quantised GEMMs: the
references compute what the real transformers modules (or an independent computation) compute; the
full-size problems validate, price as the right contraction with no uncovered op, and are deterministic."""

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
from solbench.dataset.extract.api import problem_specs  # noqa: E402
from solbench.dataset.extract.capture import build_module  # noqa: E402
from solbench.dataset.extract.configs import MODELS  # noqa: E402
from solbench.dataset.extract.modules import FAMILIES  # noqa: E402
from solbench.dataset.extract.quant import quant_recipes  # noqa: E402

from extract_testkit import module_state, tiny_problem  # noqa: E402

runner = CliRunner()


@pytest.mark.parametrize("model_name, module, shape", [
    ("convnext_large", "block", (2, 32, 9, 9)),
    ("resnet50", "bottleneck", (2, 64, 7, 7)),
    ("chameleon_vqgan", "resnet_block", (2, 32, 10, 10)),
    ("mamba_codestral_7b", "conv1d", (2, 11, 192)),
])
def test_conv_blocks_match_module_forward_and_backward(tmp_path, model_name, module, shape):
    model, recipe, problem, real, config = tiny_problem(tmp_path, model_name, module)
    tm = FAMILIES[model.family].transformers_module()
    x = torch.randn(shape)
    weights = [p.detach().clone() for _, p in module_state(real)]
    with torch.no_grad():
        expected = recipe.call(tm, config, real, x)
    got = reference_module(problem.definition).run(x, *weights)
    assert got.shape == expected.shape == x.shape
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    if module == "conv1d":  # causal: the first token sees only itself, so changing a later token leaves it alone
        later = x.clone()
        later[:, 5:] += 1.0
        moved = reference_module(problem.definition).run(later, *weights)
        torch.testing.assert_close(moved[:, :5], got[:, :5])
        assert (moved[:, 5:] - got[:, 5:]).abs().max() > 1e-3

    _, _, back, real, _ = tiny_problem(tmp_path, model_name, module, backward=True)
    params = [p for n, p in real.named_parameters()]
    given = x.clone().requires_grad_(True)
    out = recipe.call(tm, config, real, given)
    grad = torch.randn_like(out)
    expected_grads = torch.autograd.grad(out, [given, *params], grad)
    got_grads = reference_module(back.definition).run(x, *[p.detach() for _, p in module_state(real)], grad)
    assert list(back.definition.outputs)[0] == "grad_hidden_states" if module != "conv1d" else "grad_xbc"
    assert not any("running" in name for name in back.definition.outputs)  # buffers get no gradient
    assert len(got_grads) == len(expected_grads)
    for e, g in zip(expected_grads, got_grads):
        torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)


def test_conv_problems_full_size_validate_price_and_repeat(tmp_path):
    for folder in ("a", "b"):
        for model, modules in (("convnext_large", "block"), ("resnet50", "bottleneck"), ("chameleon_vqgan", "resnet_block"),
                               ("mamba_codestral_7b", "conv1d")):
            result = runner.invoke(app, ["dataset", "extract", model, "-m", modules, "--backward", "-o", str(tmp_path / folder)])
            assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 16 and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    problems = {p.name: p for p in load_problems([tmp_path / "a"])}
    block = problems["convnext_large_block"]
    assert block.definition.axes["channels"].value == 768 and block.definition.axes["width"].expression == "height"
    assert block.definition.inputs["dwconv_weight"].shape == ["channels", 1, "kernel_size", "kernel_size"]
    assert block.definition.inputs["hidden_states"].dtype.value == "float32"
    assert [(w.axes["batch_size"], w.axes["height"]) for w in block.workloads][:3] == [(1, 14), (1, 24), (1, 32)]
    bottleneck = problems["resnet50_bottleneck"].definition
    assert bottleneck.inputs["layer_1_normalization_running_var"].distribution.kind == "uniform"
    assert "num_batches_tracked" not in " ".join(bottleneck.inputs)
    result = runner.invoke(app, ["validate", str(tmp_path / "a")])
    assert result.exit_code == 0 and "did not run" not in result.output, result.output
    for name in ("convnext_large_block", "resnet50_bottleneck_backward", "chameleon_vqgan_resnet_block_backward"):
        rows = _sol(tmp_path / "a" / name)
        assert len(rows) == 8 and all(r["uncovered_ops"] == [] for r in rows)
        assert rows[0]["flops_by_unit"].get("tensor_fp32", 0) + rows[0]["flops_by_unit"].get("vector_fp32", 0) > 0


def _sol(folder: Path) -> list[dict]:
    result = runner.invoke(app, ["sol", str(folder), "--json", "-j", "1"])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("model_name, module, ep", [("deepseek_v3", "moe_ep8", 8), ("qwen3_30b_a3b", "moe_ep4", 4), ("mixtral_8x7b", "moe_ep4", 4)])
def test_expert_parallel_moe_equals_masked_full_moe(tmp_path, model_name, module, ep):
    model, recipe, problem, real, config = tiny_problem(tmp_path, model_name, module)
    full_recipe = FAMILIES[model.family].recipes["moe"]
    full = build_module(model, full_recipe, "float32", config, "cpu")
    local = real.num_local
    count = {"deepseek_v3": "n_routed_experts", "mixtral_8x7b": "num_local_experts"}.get(model_name, "num_experts")
    assert local == getattr(config, count) // ep and local >= 1
    with torch.no_grad():
        full.gate.load_state_dict(real.gate.state_dict())
        full.gate.e_score_correction_bias.copy_(torch.randn_like(full.gate.e_score_correction_bias) * 0.1) if hasattr(full.gate, "e_score_correction_bias") else None
        if hasattr(real.gate, "e_score_correction_bias"):
            real.gate.e_score_correction_bias.copy_(full.gate.e_score_correction_bias)
        for name in ("gate_up_proj", "down_proj"):
            mine = getattr(full.experts, name)
            mine.zero_()
            mine[:local].copy_(getattr(real.experts, name))  # the other ranks' experts contribute nothing
        if hasattr(full, "shared_experts"):
            for p in full.shared_experts.parameters():
                p.zero_()  # the shared expert runs elsewhere
    x = torch.randn(2, 12, config.hidden_size)
    with torch.no_grad():
        expected = full_recipe.call(FAMILIES[model.family].transformers_module(), config, full, x)
    got = reference_module(problem.definition).run(x, *[p.detach() for _, p in module_state(real)])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert expected.abs().max() > 0 and (expected == 0).all(dim=-1).any()  # some tokens pick no local expert
    assert problem.definition.inputs["experts_gate_up_proj"].shape[0] == "num_local_experts"
    assert problem.definition.axes["num_local_experts"].expression == f"num_experts // {ep}"


def test_expert_parallel_full_size_names_and_prices(tmp_path):
    result = runner.invoke(app, ["dataset", "extract", "deepseek_v3", "-m", "moe_ep8", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    definition = load_problems([tmp_path / "deepseek_v3_moe_ep8"])[0].definition
    assert definition.inputs["gate_weight"].shape == ["num_experts", "hidden_size"]  # the router sees all 256 experts
    assert definition.inputs["experts_gate_up_proj"].shape == ["num_local_experts", "gate_up_dim", "hidden_size"]
    assert definition.axes["num_experts"].value == 256
    assert "shared" not in " ".join(definition.inputs) and "8-way expert parallelism" in definition.description
    assert all(r["uncovered_ops"] == [] for r in _sol(tmp_path / "deepseek_v3_moe_ep8"))


def test_dtype_option_names_variants_and_keeps_default(tmp_path):
    result = runner.invoke(app, ["dataset", "extract", "llama3_8b", "-m", "norm,rope_apply", "--dtype", "float32", "--backward", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["dataset", "extract", "vit_large", "-m", "mlp", "--dtype", "bfloat16", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["dataset", "extract", "vit_large", "-m", "layernorm", "--dtype", "float32", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    problems = {p.name: p for p in load_problems([tmp_path])}
    assert set(problems) == {"llama3_8b_norm_fp32", "llama3_8b_rope_apply_fp32", "llama3_8b_norm_fp32_backward",
                             "llama3_8b_rope_apply_fp32_backward", "vit_large_mlp_bf16", "vit_large_layernorm"}
    norm = problems["llama3_8b_norm_fp32"].definition
    assert norm.inputs["hidden_states"].dtype.value == "float32" and "published in bfloat16" in norm.description
    assert problems["llama3_8b_norm_fp32"].workloads[0].tolerance.max_atol == 1e-4
    assert problems["vit_large_mlp_bf16"].definition.inputs["fc1_weight"].dtype.value == "bfloat16"
    assert "published in" not in problems["vit_large_layernorm"].definition.description
    assert runner.invoke(app, ["validate", str(tmp_path)]).exit_code == 0


@pytest.mark.parametrize("args, expected", [
    (["llama3_8b", "--dtype", "float64"], "unknown dtype 'float64'"),
    (["llama3_8b", "-m", "fp8_gemm_qkv", "--dtype", "float32"], "fixed dtypes"),
])
def test_bad_dtype_is_one_line(tmp_path, args, expected):
    result = runner.invoke(app, ["dataset", "extract", *args, "-o", str(tmp_path)])
    lines = [l for l in result.output.splitlines() if l.strip()]
    assert result.exit_code == 1 and len(lines) == 1 and expected in lines[0], result.output


def _quant(tmp_path: Path, model_name: str, module: str):
    result = runner.invoke(app, ["dataset", "extract", model_name, "-m", module, "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [problem] = load_problems([tmp_path / f"{model_name}_{module}"])
    return problem


def _small(problem, m: int = 16):
    workload = problem.workloads[0].model_copy(update={"axes": {"num_tokens": m}})
    return generate_inputs(problem, workload, seed=3)


def test_fp8_per_tensor_gemm_equals_dequantised_product(tmp_path):
    problem = _quant(tmp_path, "llama3_8b", "fp8_gemm_qkv")
    definition = problem.definition
    assert definition.description.startswith("hand-written reference:")
    assert (definition.axes["N"].value, definition.axes["K"].value) == (6144, 4096)
    values = _small(problem, 2)  # two tokens: torch's CPU _scaled_mm is a scalar loop (27 s at 16 tokens)
    got = reference_module(definition).run(**values)
    a, b = values["a"].float() * values["a_scale"], values["b"].float() * values["b_scale"]
    assert got.dtype == torch.bfloat16 and got.shape == (2, 6144)
    torch.testing.assert_close(got.float(), a @ b.T, atol=1e-2, rtol=1e-2)
    rows = _sol(tmp_path / "llama3_8b_fp8_gemm_qkv")
    assert all(r["uncovered_ops"] == [] for r in rows) and set(rows[-1]["flops_by_unit"]) >= {"tensor_fp8"}
    assert rows[-1]["flops_by_unit"]["tensor_fp8"] == 2 * 8192 * 6144 * 4096


def test_fp8_block_gemm_equals_blockwise_sum_and_prices_as_fp8(tmp_path):
    problem = _quant(tmp_path, "deepseek_v3", "fp8_block_gemm_kv_b")
    definition = problem.definition
    assert definition.inputs["b_scale"].shape == ["N_blocks", "K_blocks"] and definition.inputs["a_scale"].shape == ["num_tokens", "K_blocks"]
    assert (definition.axes["N"].value, definition.axes["K"].value) == (32768, 512)
    values = _small(problem, 4)
    got = reference_module(definition).run(**values).float()
    a, s_a, b, s_b = values["a"].float(), values["a_scale"], values["b"].float(), values["b_scale"]
    expected = torch.zeros(4, 32768)
    for kb in range(512 // 128):  # a sum of per-block products, each scaled by its two scales
        cols = slice(kb * 128, (kb + 1) * 128)
        partial = a[:, cols] @ b[:, cols].T
        expected += partial * s_a[:, kb:kb + 1] * s_b[:, kb].repeat_interleave(128)[None, :]
    torch.testing.assert_close(got, expected, atol=1e-2, rtol=1e-2)
    rows = _sol(tmp_path / "deepseek_v3_fp8_block_gemm_kv_b")
    assert all(r["uncovered_ops"] == [] for r in rows)
    assert rows[-1]["flops_by_unit"]["tensor_fp8"] == 2 * 8192 * 32768 * 512  # priced as an fp8 contraction, not fp32


def test_nvfp4_gemm_decodes_packed_codes(tmp_path):
    problem = _quant(tmp_path, "deepseek_v3", "nvfp4_gemm_expert_down")
    definition = problem.definition
    assert definition.inputs["b"].shape == ["N", "K_half"] and definition.inputs["b"].dtype.value == "float4_e2m1fn_x2"
    assert definition.axes["K_half"].expression == "K // 2" and definition.inputs["b_scale"].dtype.value == "float8_e4m3fn"
    values = _small(problem, 2)
    got = reference_module(definition).run(**values).float()
    magnitudes = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])

    def decoded(packed, scales):  # bit by bit: low nibble first, sign in bit 3
        raw = packed.view(torch.uint8).long()
        codes = torch.stack((raw % 16, raw // 16), dim=-1).flatten(-2)
        values_ = magnitudes[codes % 8] * torch.where(codes >= 8, -1.0, 1.0)
        return values_ * scales.float().repeat_interleave(16, dim=-1)

    expected = values["global_scale"] * (decoded(values["a"], values["a_scale"]) @ decoded(values["b"], values["b_scale"]).T)
    torch.testing.assert_close(got, expected, atol=2e-2, rtol=1e-2)
    rows = _sol(tmp_path / "deepseek_v3_nvfp4_gemm_expert_down")
    assert all(r["uncovered_ops"] == [] for r in rows) and rows[-1]["flops_by_unit"]["tensor_fp4"] == 2 * 8192 * 7168 * 2048


def test_quant_problems_validate_and_are_listed(tmp_path):
    for model_name in ("llama3_70b", "qwen3_30b_a3b"):
        modules = ",".join(quant_recipes(MODELS[model_name]))
        for folder in ("a", "b"):
            assert runner.invoke(app, ["dataset", "extract", model_name, "-m", modules, "-o", str(tmp_path / folder)]).exit_code == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 20 and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    result = runner.invoke(app, ["validate", str(tmp_path / "a")])
    assert result.exit_code == 0 and "did not run" not in result.output, result.output
    names = [name for name, _, _ in problem_specs(MODELS["deepseek_v3"], None, True)]
    assert "deepseek_v3_fp8_block_gemm_q_b" in names and "deepseek_v3_fp8_block_gemm_q_b_backward" not in names


@pytest.mark.parametrize("model_name", ["qwen3_30b_a3b", "mixtral_8x7b", "deepseek_v3"])
def test_moe_router_then_experts_is_the_moe_block(tmp_path, model_name):
    """moe_router and moe_experts, each the model's own module, match their modules, and the experts fed
    with the router's picks give the block's output (less DeepSeek's shared expert)."""
    model, _, router_problem, router, config = tiny_problem(tmp_path, model_name, "moe_router")
    _, _, experts_problem, experts, _ = tiny_problem(tmp_path, model_name, "moe_experts")
    full_recipe = FAMILIES[model.family].recipes["moe"]
    full = build_module(model, full_recipe, "float32", config, "cpu")
    with torch.no_grad():
        full.gate.load_state_dict(router.state_dict())
        full.experts.load_state_dict(experts.state_dict())
        for p in (full.shared_experts.parameters() if hasattr(full, "shared_experts") else ()):
            p.zero_()
    x = torch.randn(2, 12, config.hidden_size)
    weights, indices = reference_module(router_problem.definition).run(x, *[p.detach() for _, p in module_state(router)])
    assert indices.dtype == torch.int64 and indices.shape == (2, 12, config.num_experts_per_tok)
    _, expected_weights, expected_indices = router(x.reshape(-1, config.hidden_size))
    torch.testing.assert_close(weights.reshape(-1, indices.shape[-1]), expected_weights)
    assert torch.equal(indices.reshape(-1, indices.shape[-1]), expected_indices)
    got = reference_module(experts_problem.definition).run(x, indices, weights, *[p.detach() for _, p in module_state(experts)])
    with torch.no_grad():
        block = full_recipe.call(FAMILIES[model.family].transformers_module(), config, full, x)
    torch.testing.assert_close(got, block, atol=1e-5, rtol=1e-5)
    assert experts_problem.definition.inputs["topk_indices"].dtype.value == "int64"


def test_a_graph_that_calls_transformers_own_operator_is_refused(tmp_path):
    """In fp32, transformers routes the MoE experts' grouped GEMM to an operator of its own: such a
    reference would need transformers to run, so nothing is written."""
    result = runner.invoke(app, ["dataset", "extract", "mixtral_8x7b", "-m", "moe_experts", "--dtype", "float32", "-o", str(tmp_path)])
    assert result.exit_code == 1
    assert "transformers' own operator grouped_mm_fallback" in result.output and "Traceback" not in result.output
    assert not any(tmp_path.iterdir())
