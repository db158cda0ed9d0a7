"""The calibration's kernels do what their byte and FLOP counts say: the FMA loop (Triton, in its interpreter
on a CPU) applies x = x * a + b exactly `iterations` times in the input's own dtype, and the copies move
what they claim."""

from __future__ import annotations

import os
import subprocess
import sys

import torch

from solbench.energy.kernels import copies

FMA_CHECK = """
import torch
from solbench.energy.kernels import launch_fma
for dtype in (torch.float32, torch.float16, torch.float64):
    x = torch.randn(3000).to(dtype)
    y = torch.empty_like(x)
    launch_fma(x, y, 7)
    expected = x.clone()
    for _ in range(7):
        expected = expected * torch.tensor(0.999, dtype=dtype) + torch.tensor(0.001, dtype=dtype)
    assert y.dtype == dtype and torch.equal(y, expected), dtype
print("ok")
"""


def test_the_fma_loop_runs_its_iterations_in_its_dtype():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", FMA_CHECK], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_copies_count_their_bytes():
    found = {kernel.name: kernel for kernel in copies("cpu", scale=0.25)}
    assert set(found) == {"dram-copy-64MiB", "dram-copy-256MiB", "l2-copy-4MiB", "l2-copy-10MiB"}  # DRAM sizes scaled, never below 64 MiB
    assert found["l2-copy-4MiB"].dram_bytes == 0 and found["l2-copy-4MiB"].l2_bytes == 2 * 4 * 2**20
    assert found["dram-copy-64MiB"].dram_bytes == found["dram-copy-64MiB"].l2_bytes == 2 * 64 * 2**20
    target = found["l2-copy-4MiB"].run()
    assert isinstance(target, torch.Tensor) and target.numel() * 4 == 4 * 2**20
