import torch
import torch.nn as nn

batch_size = 16
features = 1024


class Model(nn.Module):
    """Per-feature scale held as a plain tensor attribute (neither a parameter
    nor a registered buffer), followed by ReLU."""

    def __init__(self, features):
        super().__init__()
        self.scale = torch.randn(features)

    def forward(self, x):
        return torch.relu(x * self.scale)


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
