"""How long `solbench sol` takes on many KernelBench-style problems of realistic size.

Writes N KernelBench-style files (default 200: matmuls of 4096-16384, 256x256 images with 64+
channels at batch 16+, attention up to sequence 32768, norms, softmax, elementwise chains) into a
temporary folder, runs `solbench sol DIR --json` once as a subprocess, and reports its wall time
and peak memory (max RSS). Every problem must be analysed with no uncovered op.

    python benchmarks/sol_speed.py [--problems 200]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

TEMPLATES = {
    "matmul": """
M, N, K = {m}, {n}, {k}
class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)
def get_inputs():
    return [torch.randn(M, K, dtype=torch.{dtype}), torch.randn(K, N, dtype=torch.{dtype})]
def get_init_inputs():
    return []
""",
    "linear_gelu": """
B, IN, OUT = {m}, {k}, {n}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(IN, OUT)
    def forward(self, x):
        return F.gelu(self.fc(x))
def get_inputs():
    return [torch.randn(B, IN)]
def get_init_inputs():
    return []
""",
    "conv": """
B, C, H, W, OC = {batch}, {channels}, 256, 256, {out_channels}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(C, OC, 3, padding=1, groups={groups})
        self.bn = nn.BatchNorm2d(OC)
    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))
def get_inputs():
    return [torch.randn(B, C, H, W)]
def get_init_inputs():
    return []
""",
    "attention": """
B, H, S, D = {batch}, {heads}, {seq}, 128
class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal={causal})
def get_inputs():
    return [torch.randn(B, H, S, D, dtype=torch.bfloat16) for _ in range(3)]
def get_init_inputs():
    return []
""",
    "layernorm_softmax": """
B, S, D = {batch}, {seq}, {hidden}
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
    def forward(self, x):
        return torch.softmax(self.ln(x), dim=-1)
def get_inputs():
    return [torch.randn(B, S, D)]
def get_init_inputs():
    return []
""",
    "elementwise": """
B, D = {batch}, {hidden}
class Model(nn.Module):
    def forward(self, x, y):
        return torch.tanh(x * torch.sigmoid(y)) + 0.5 * x
def get_inputs():
    return [torch.randn(B, D), torch.randn(B, D)]
def get_init_inputs():
    return []
""",
}


def parameters(index: int) -> tuple[str, dict[str, object]]:
    sizes = [4096, 8192, 12288, 16384]
    kind = list(TEMPLATES)[index % len(TEMPLATES)]
    s = sizes[index % 4]
    t = sizes[(index // 4) % 4]
    return kind, {
        "m": s, "n": t, "k": sizes[(index // 16) % 4], "dtype": ["float32", "bfloat16"][index % 2],
        "batch": 16 + 16 * (index % 3), "channels": 64 * (1 + index % 2), "out_channels": 64 * (1 + index % 4),
        "groups": [1, 1, 64][index % 3] if index % 2 == 0 else 1, "heads": [8, 16, 32][index % 3],
        "seq": [2048, 8192, 32768][index % 3], "causal": index % 2 == 0, "hidden": [1024, 4096, 8192][index % 3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for index in range(args.problems):
            kind, values = parameters(index)
            if kind == "attention":
                values["batch"] = 1 if values["seq"] == 32768 else 4
            (root / f"{index:03d}_{kind}.py").write_text(HEADER + TEMPLATES[kind].format(**values))
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "solbench.cli", "sol", str(root), "--json"], capture_output=True, text=True)
        wall = time.perf_counter() - start
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if done.returncode != 0:
            sys.exit(f"solbench sol failed ({done.returncode}):\n{done.stderr[-3000:]}")
        results = json.loads(done.stdout)
        uncovered = sorted({op for r in results for op in r["uncovered_ops"]})
        assert len(results) == args.problems, f"{len(results)} results for {args.problems} problems"
        assert not uncovered, f"uncovered ops: {uncovered}"
        biggest = max(results, key=lambda r: r["flops"])
        print(f"problems: {args.problems} KernelBench-style files (realistic sizes)")
        print(f"solbench sol --json: wall {wall:.2f} s, peak RSS {peak_mb:.0f} MB, uncovered ops: none")
        print(f"largest: {biggest['problem']} {biggest['flops'] / 1e12:.1f} TFLOP, T_SOL {biggest['t_sol_ms']:.3f} ms on {results[0]['hardware']}")


if __name__ == "__main__":
    main()
