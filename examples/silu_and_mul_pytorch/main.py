"""silu_and_mul_llama3_8b in PyTorch: output = silu(gate) * up, where gate_up = [gate | up].

Destination-passing: the output is preallocated and passed after the input; the product is
written straight into it (no temporary for the result).
"""

import torch
import torch.nn.functional as F


def run(gate_up: torch.Tensor, output: torch.Tensor) -> None:
    d = gate_up.shape[-1] // 2
    torch.mul(F.silu(gate_up[..., :d]), gate_up[..., d:], out=output)
