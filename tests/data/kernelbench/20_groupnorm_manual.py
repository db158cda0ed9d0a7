import torch
import torch.nn as nn

batch_size = 4
channels = 32
num_groups = 8
height = 16
width = 16
eps = 1e-5


class Model(nn.Module):
    """Group normalisation written out by hand, with learnable per-channel
    weight and bias parameters."""

    def __init__(self, channels, num_groups, eps):
        super().__init__()
        self.num_groups = num_groups
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        N, C, H, W = x.shape
        g = x.view(N, self.num_groups, -1)
        mean = g.mean(dim=-1, keepdim=True)
        var = g.var(dim=-1, keepdim=True, unbiased=False)
        g = (g - mean) / torch.sqrt(var + self.eps)
        x = g.view(N, C, H, W)
        return x * self.weight.view(1, C, 1, 1) + self.bias.view(1, C, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, num_groups, eps]
