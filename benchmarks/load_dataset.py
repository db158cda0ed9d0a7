"""How long loading and validating a large dataset takes.

Writes a dataset of N problems with W workloads each (default 250 x 16) into a temporary folder,
then times (a) `solbench.data.loaders.scan` in this process and (b) `solbench validate DIR` as a
fresh subprocess (interpreter start included). Prints medians over --repeats runs.

    python benchmarks/load_dataset.py [--problems 250] [--workloads 16] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REFERENCE = '''import torch


def run(x, w, bias, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (h * w.float()).to(x.dtype) + bias.unsqueeze(0), h.sum(-1)
'''


def write_dataset(root: Path, problems: int, workloads: int) -> None:
    for index in range(problems):
        subset = root / f"L{index % 3 + 1}"
        folder = subset / f"problem_{index:04d}"
        folder.mkdir(parents=True)
        definition = {
            "name": folder.name,
            "op_type": "rmsnorm",
            "description": "synthetic RMSNorm-like problem for the loading benchmark",
            "axes": {
                "T": {"type": "var"},
                "H": {"type": "const", "value": 1024 * (1 + index % 4)},
                "G": {"type": "const", "value": 8},
                "HG": {"type": "expr", "expression": "H // G"},
            },
            "constraints": ["H % G == 0", "HG * G == H"],
            "inputs": {
                "x": {"shape": ["T", "H"], "dtype": "bfloat16"},
                "w": {"shape": ["H"], "dtype": "bfloat16", "distribution": {"kind": "uniform", "low": 0.5, "high": 1.5}},
                "bias": {"shape": ["H"], "dtype": "float32"},
                "eps": {"shape": None, "dtype": "float32"},
            },
            "outputs": {"y": {"shape": ["T", "H"], "dtype": "bfloat16"}, "s": {"shape": ["T"], "dtype": "float32"}},
            "reference": REFERENCE,
        }
        (folder / "definition.json").write_text(json.dumps(definition, indent=2))
        lines = []
        for w in range(workloads):
            lines.append(
                json.dumps(
                    {
                        "uuid": str(uuid.uuid4()),
                        "axes": {"T": 2**w},
                        "inputs": {"x": {"type": "random"}, "w": {"type": "random"}, "bias": {"type": "random"}, "eps": {"type": "scalar", "value": 1e-6}},
                        "tolerance": {"max_atol": 0.01, "max_rtol": 0.01, "required_matched_ratio": 1.0},
                    }
                )
            )
        (folder / "workload.jsonl").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=250)
    parser.add_argument("--workloads", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from solbench.data.loaders import scan

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_dataset(root, args.problems, args.workloads)
        in_process, cli = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            results = scan(root)
            in_process.append(time.perf_counter() - start)
            assert len(results) == args.problems and all(r.ok for r in results), "the synthetic dataset must validate"
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "solbench.cli", "validate", str(root)], capture_output=True, text=True)
            cli.append(time.perf_counter() - start)
            assert done.returncode == 0, done.stderr
        total = args.problems * args.workloads
        print(f"dataset: {args.problems} problems x {args.workloads} workloads = {total} workloads")
        print(f"scan() in process:        median {statistics.median(in_process):.3f} s  (min {min(in_process):.3f}, max {max(in_process):.3f}, {args.repeats} runs)")
        print(f"solbench validate (CLI):  median {statistics.median(cli):.3f} s  (min {min(cli):.3f}, max {max(cli):.3f}, {args.repeats} runs)")


if __name__ == "__main__":
    main()
