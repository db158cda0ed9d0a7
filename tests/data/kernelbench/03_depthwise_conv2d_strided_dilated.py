import torch
import torch.nn as nn

batch_size = 4
channels = 32
height = 48
width = 48
kernel_size = 3
stride = 2
padding = 2
dilation = 2


class Model(nn.Module):
    """Depthwise 2D convolution (groups == channels) with stride, padding and dilation."""

    def __init__(self, channels, kernel_size, stride, padding, dilation):
        super().__init__()
        self.conv = nn.Conv2d(
            channels,
            channels,
            kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=channels,
            bias=False,
        )

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size, stride, padding, dilation]
