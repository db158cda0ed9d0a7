import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
in_channels = 3
out_channels = 8
depth = 8
height = 16
width = 16
kernel_size = (3, 3, 3)
padding = 1


class Model(nn.Module):
    """3D convolution with padding followed by GELU."""

    def __init__(self, in_channels, out_channels, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=padding)

    def forward(self, x):
        return F.gelu(self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding]
