"""Capturing references (issue 11, items 2, 3 and 6): once per problem with symbolic sizes where the
graph allows, data-dependent sizes from real integer inputs or at their least, no real full-size run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solbench.sol.analysis import analyze, decomposition_for
from solbench.sol.capture import REAL_CAPTURE_BYTES, CaptureError, Captures
from solbench.sol.hardware import get_hardware
from solbench.data.loaders import load_problems

H200 = get_hardware("H200")


def write_problem(folder: Path, reference: str, inputs: dict, outputs: dict, axes: dict, workloads: list[dict], **extra) -> Path:
    folder.mkdir(parents=True)
    definition = {"name": folder.name, "axes": axes, "inputs": inputs, "outputs": outputs, "reference": reference, **extra}
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text("".join(json.dumps({"uuid": f"w{i}", **w}) + "\n" for i, w in enumerate(workloads)))
    return folder


def loaded(folder: Path):
    (problem,) = load_problems([folder])
    return problem


def rows(problem, captures=None):
    captures = captures if captures is not None else Captures(problem, decomposition_for)
    return [analyze(problem, w, H200, "relaxed", captures) for w in problem.workloads], captures


def same_bounds(a, b) -> None:
    assert a.flops_by_unit == b.flops_by_unit
    assert a.bytes_fused == b.bytes_fused and a.bytes_unfused == b.bytes_unfused
    assert a.t_sol_s == pytest.approx(b.t_sol_s, rel=1e-12)


RMSNORM = "import torch\n\ndef run(x, w):\n    v = x.float().pow(2).mean(-1, keepdim=True)\n    return (x.float() * torch.rsqrt(v + 1e-6) * w).to(x.dtype)\n"


def test_one_capture_prices_every_workload(tmp_path):
    sizes = [2, 3, 17, 64, 100, 1000, 4096, 8191]
    problem = loaded(write_problem(
        tmp_path / "rms", RMSNORM, {"x": {"shape": ["M", "H"], "dtype": "bfloat16"}, "w": {"shape": ["H"], "dtype": "float32"}},
        {"y": {"shape": ["M", "H"], "dtype": "bfloat16"}}, {"M": {"type": "var"}, "H": {"type": "const", "value": 4096}},
        [{"axes": {"M": m}, "inputs": {"x": {"type": "random"}, "w": {"type": "random"}}} for m in sizes]))
    shared, captures = rows(problem)
    assert captures.captured == 1 and captures.concrete_only is None
    for workload, result in zip(problem.workloads, shared):
        alone = analyze(problem, workload, H200, "relaxed")  # its own capture
        same_bounds(result, alone)
        m = workload.axes["M"]
        assert result.bytes_fused == m * 4096 * 2 * 2 + 4096 * 4


def test_a_size_of_one_is_no_symbol_and_serves_only_itself(tmp_path):
    problem = loaded(write_problem(
        tmp_path / "ones", RMSNORM, {"x": {"shape": ["B", "M", "H"], "dtype": "bfloat16"}, "w": {"shape": ["H"], "dtype": "float32"}},
        {"y": {"shape": ["B", "M", "H"], "dtype": "bfloat16"}},
        {"B": {"type": "var"}, "M": {"type": "var"}, "H": {"type": "const", "value": 256}},
        [{"axes": {"B": b, "M": m}, "inputs": {"x": {"type": "random"}, "w": {"type": "random"}}} for b, m in ((1, 16), (1, 32), (8, 16), (8, 32))]))
    results, captures = rows(problem)
    assert [r.bytes_fused for r in results] == [b * m * 256 * 4 + 256 * 4 for b, m in ((1, 16), (1, 32), (8, 16), (8, 32))]
    assert captures.captured == 2  # B = 1 is a number in the first capture: B = 8 needs another


def test_a_branch_on_sizes_is_a_guard(tmp_path):
    reference = "def run(x):\n    if x.shape[0] > 1000:\n        return x * 2\n    return (x + 1) * 3\n"
    problem = loaded(write_problem(
        tmp_path / "branch", reference, {"x": {"shape": ["M"], "dtype": "float32"}}, {"y": {"shape": ["M"], "dtype": "float32"}},
        {"M": {"type": "var"}}, [{"axes": {"M": m}, "inputs": {"x": {"type": "random"}}} for m in (10, 20, 5000, 9000)]))
    results, captures = rows(problem)
    assert captures.captured == 2  # one per side of the branch
    assert [r.flops_by_unit["vector_fp32"] for r in results] == [20, 40, 5000, 9000]


def test_different_scalar_inputs_get_their_own_capture(tmp_path):
    reference = "import torch\n\ndef run(x, k):\n    return torch.topk(x, k, dim=-1).values\n"
    problem = loaded(write_problem(
        tmp_path / "topk", reference, {"x": {"shape": ["M", "V"], "dtype": "float32"}, "k": {"shape": None, "dtype": "int32"}},
        {"y": {"shape": ["M", "K"], "dtype": "float32"}}, {"M": {"type": "var"}, "V": {"type": "const", "value": 1024}, "K": {"type": "var"}},
        [{"axes": {"M": 8, "K": k}, "inputs": {"x": {"type": "random"}, "k": {"type": "scalar", "value": k}}} for k in (4, 4, 16)]))
    results, captures = rows(problem)
    assert captures.captured == 2
    assert results[0].bytes_fused < results[2].bytes_fused


MOE = """import torch

def run(x, ids, w):
    counts = torch.bincount(ids.flatten(), minlength=w.shape[0])
    order = torch.argsort(ids.flatten(), stable=True)
    out = torch.zeros_like(x)
    start = 0
    for expert, count in enumerate(counts.tolist()):
        if count == 0:
            continue
        rows = order[start:start + count]
        start += count
        tokens = rows // ids.shape[1]
        out.index_add_(0, tokens, x[tokens] @ w[expert])
    return out


def make_ids(axes, device):
    scores = torch.rand(axes["T"], axes["E"])
    return {"ids": scores.argsort(dim=-1)[:, :axes["K"]].to(device)}
"""


def test_routing_from_real_integer_inputs_gives_exact_expert_work(tmp_path):
    problem = loaded(write_problem(
        tmp_path / "moe", MOE, {"x": {"shape": ["T", "H"], "dtype": "bfloat16"}, "ids": {"shape": ["T", "K"], "dtype": "int64"},
                                "w": {"shape": ["E", "H", "H"], "dtype": "bfloat16"}},
        {"y": {"shape": ["T", "H"], "dtype": "bfloat16"}},
        {"T": {"type": "var"}, "K": {"type": "const", "value": 2}, "E": {"type": "const", "value": 8}, "H": {"type": "const", "value": 2048}},
        [{"axes": {"T": t}, "inputs": {"x": {"type": "random"}, "ids": {"type": "custom"}, "w": {"type": "random"}}} for t in (4, 64, 4096)],
        custom_inputs_entrypoint="make_ids"))
    results, captures = rows(problem)
    assert "data-dependent" in (captures.concrete_only or "")  # .tolist(): each workload gets its own capture
    for workload, result in zip(problem.workloads, results):
        tokens = workload.axes["T"]
        assert result.flops_by_unit["tensor_bf16"] == 2 * tokens * 2 * 2048 * 2048  # every (token, expert) pair once
        assert not any("real CPU" in note for note in result.notes)
        assert not any("least" in note for note in result.notes)  # the counts came from the real ids


def test_data_dependent_values_of_floats_take_their_least(tmp_path):
    reference = "import torch\n\ndef run(x):\n    n = int((x > 0).sum().item())\n    return x[:n].sum(0, keepdim=True) if n else x[:1] * 0\n"
    problem = loaded(write_problem(
        tmp_path / "item", reference, {"x": {"shape": ["M", "D"], "dtype": "float32"}}, {"y": {"shape": ["1", "D"], "dtype": "float32"}},
        {"M": {"type": "var"}, "D": {"type": "const", "value": 64}}, [{"axes": {"M": 1 << 20}, "inputs": {"x": {"type": "random"}}}]))
    (result,), _ = rows(problem)
    assert any("data-dependent op _local_scalar_dense" in note and "least" in note for note in result.notes)
    assert not any("real CPU" in note for note in result.notes)


def test_a_reference_that_names_cuda_is_analysed_without_a_gpu(tmp_path):
    reference = ("import torch\n\ndef run(x):\n    y = x.cuda() * 2\n    z = torch.zeros(x.shape, device='cuda')\n"
                 "    return (y + z.to('cuda:0')).to(torch.device('cuda'))\n")
    problem = loaded(write_problem(
        tmp_path / "cuda", reference, {"x": {"shape": ["M"], "dtype": "float32"}}, {"y": {"shape": ["M"], "dtype": "float32"}},
        {"M": {"type": "var"}}, [{"axes": {"M": 1 << 30}, "inputs": {"x": {"type": "random"}}}]))
    (result,), _ = rows(problem)
    assert result.bytes_fused == 2 * 4 << 30


NUMPY = "import torch\n\ndef run(x):\n    scale = float(x.abs().max().numpy())\n    return x / scale\n"


def test_a_reference_reading_values_runs_on_real_tensors_only_when_small(tmp_path):
    problem = loaded(write_problem(
        tmp_path / "numpy", NUMPY, {"x": {"shape": ["M"], "dtype": "float32"}}, {"y": {"shape": ["M"], "dtype": "float32"}},
        {"M": {"type": "var"}}, [{"axes": {"M": m}, "inputs": {"x": {"type": "random"}}} for m in (1024, REAL_CAPTURE_BYTES // 4 + 1)]))
    small = analyze(problem, problem.workloads[0], H200, "relaxed")
    assert small.notes[0].startswith("captured on real CPU tensors (0.0 MiB of inputs)")
    with pytest.raises(CaptureError, match=r"too large to run it on real ones \(at most 1024 MiB\)"):
        analyze(problem, problem.workloads[1], H200, "relaxed")


def test_coverage_of_ffts_and_in_place_metadata(tmp_path):
    reference = ("import torch\n\ndef run(x, k):\n    n = x.shape[-1]\n    y = torch.fft.irfft(torch.fft.rfft(x, n=2 * n) * torch.fft.rfft(k, n=2 * n), n=2 * n)[..., :n]\n"
                 "    y = y.unsqueeze(0)\n    y.squeeze_(0)\n    return y\n")
    problem = loaded(write_problem(
        tmp_path / "fft", reference, {"x": {"shape": ["B", "N"], "dtype": "float32"}, "k": {"shape": ["B", "N"], "dtype": "float32"}},
        {"y": {"shape": ["B", "N"], "dtype": "float32"}}, {"B": {"type": "var"}, "N": {"type": "const", "value": 1024}},
        [{"axes": {"B": 8}, "inputs": {"x": {"type": "random"}, "k": {"type": "random"}}}]))
    (result,), _ = rows(problem)
    assert result.uncovered_ops == []
    transforms = 3 * 8 * 5 * 2048 * 11 / 2  # two r2c and one c2r of length 2048 per row: 5 N log2 N / 2 each
    assert result.flops_by_unit["vector_fp32"] >= transforms


def test_coverage_of_backward_convolutions_and_attention(tmp_path):
    from sol_testkit import sol

    attention = sol("""
        import torch
        def run(q, k, v, g):
            q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return torch.autograd.grad(o, (q, k, v), g)
    """, {n: ([2, 4, 256, 64], "bfloat16") for n in "qkvg"}, {n: ([2, 4, 256, 64], "bfloat16") for n in ("dq", "dk", "dv")})
    pairs = 2 * 4 * 256 * 257 // 2
    assert attention.uncovered_ops == []
    assert attention.flops_by_unit["tensor_bf16"] == 2 * pairs * 128 + 2 * pairs * (3 * 64 + 2 * 64)  # forward + backward
    conv = sol("""
        import torch
        def run(x, w, g):
            x, w = x.detach().requires_grad_(True), w.detach().requires_grad_(True)
            return torch.autograd.grad(torch.nn.functional.conv2d(x, w, padding=1), (x, w), g)
    """, {"x": ([2, 16, 32, 32], "float32"), "w": ([32, 16, 3, 3], "float32"), "g": ([2, 32, 32, 32], "float32")},
        {"dx": ([2, 16, 32, 32], "float32"), "dw": ([32, 16, 3, 3], "float32")})
    assert conv.uncovered_ops == []
    assert conv.flops_by_unit == {"tensor_fp32": 3 * 2 * 2 * 1024 * 32 * 16 * 9}  # forward, input and weight gradients


def test_gradients_scattered_into_zeros_are_not_quadratic(tmp_path):
    from sol_testkit import sol

    # autograd of x[:, i] for every step i adds one zero-padded full-size gradient per step; a kernel writes each slice once
    def steps(n: int):
        return sol(f"""
            import torch
            def run(x, g):
                x = x.detach().requires_grad_(True)
                y = torch.stack([x[:, i] * 2 for i in range({n})], dim=1)
                return torch.autograd.grad(y, x, g)[0]
        """, {"x": ([64, n], "float32"), "g": ([64, n], "float32")}, {"dx": ([64, n], "float32")})

    small, large = steps(32), steps(64)
    ratio = large.flops_by_unit["vector_fp32"] / small.flops_by_unit["vector_fp32"]
    assert ratio == pytest.approx(2.0, rel=0.05)  # linear in the steps, as the work is
