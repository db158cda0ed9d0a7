import torch
import torch.nn as nn

batch_size = 4
in_channels = 8
out_channels = 16
length = 256
kernel_size = 5


class Model(nn.Module):
    """1D convolution followed by SiLU, with bfloat16 inputs and weights
    (the module converts itself to bfloat16)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.to(torch.bfloat16)

    def forward(self, x):
        return torch.nn.functional.silu(self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, in_channels, length, dtype=torch.bfloat16)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
