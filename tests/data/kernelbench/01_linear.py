import torch
import torch.nn as nn

batch_size = 32
in_features = 512
out_features = 256


class Model(nn.Module):
    """Single fully connected layer (matmul + bias)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=True)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
