import torch
import torch.nn as nn

batch_size = 4
dim = 8


class Model(nn.Module):
    """Malformed on purpose: importing the module raises."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


raise RuntimeError("this module needs a GPU that is not there")
