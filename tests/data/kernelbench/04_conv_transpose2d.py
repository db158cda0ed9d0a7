import torch
import torch.nn as nn

batch_size = 4
in_channels = 16
out_channels = 8
height = 16
width = 16
kernel_size = 4
stride = 2
padding = 1
output_padding = 0


class Model(nn.Module):
    """Transposed 2D convolution that doubles the spatial size."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
        )

    def forward(self, x):
        return self.conv_transpose(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding]
