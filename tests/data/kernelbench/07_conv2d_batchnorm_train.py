import torch
import torch.nn as nn

batch_size = 8
in_channels = 3
out_channels = 16
height = 32
width = 32
kernel_size = 3


class Model(nn.Module):
    """Conv2d followed by BatchNorm2d. The module stays in training mode, so each
    forward uses batch statistics and updates running_mean / running_var /
    num_batches_tracked in place."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
