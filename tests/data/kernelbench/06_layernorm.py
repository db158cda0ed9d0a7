import torch
import torch.nn as nn

batch_size = 8
seq_len = 64
hidden = 256


class Model(nn.Module):
    """Layer normalisation over the last dimension with elementwise affine."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [(hidden,)]
