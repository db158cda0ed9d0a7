import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
seq_len = 32
hidden = 128
ffn_hidden = 512


class Model(nn.Module):
    """Pre-norm transformer MLP block: x + fc2(gelu(fc1(LayerNorm(x))))."""

    def __init__(self, hidden, ffn_hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn_hidden)
        self.fc2 = nn.Linear(ffn_hidden, hidden)

    def forward(self, x):
        h = self.norm(x)
        h = F.gelu(self.fc1(h))
        h = self.fc2(h)
        return x + h


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, ffn_hidden]
