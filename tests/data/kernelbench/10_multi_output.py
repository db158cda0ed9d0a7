import torch
import torch.nn as nn

batch_size = 16
in_features = 256
out_features = 128


class Model(nn.Module):
    """Returns two tensors of different shapes: a projection and a row sum."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.05)

    def forward(self, x):
        proj = x @ self.weight
        row_sum = x.sum(dim=1)
        return proj, row_sum


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
