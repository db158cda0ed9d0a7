import torch
import torch.nn as nn

M = 128
K = 256
N = 192


class Model(nn.Module):
    """Matrix multiply against a learnable weight held as a bare parameter."""

    def __init__(self, K, N):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(K, N))

    def forward(self, x):
        return torch.matmul(x, self.weight)


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
