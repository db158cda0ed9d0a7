import torch
import torch.nn as nn

batch_size = 8
seq_len = 128
hidden = 384
eps = 1e-6


class Model(nn.Module):
    """RMS normalisation written out by hand, with a learnable scale."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return (x / rms) * self.weight


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, eps]
