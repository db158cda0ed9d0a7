import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
seq_len = 32
embed_dim = 64
max_seq_len = 64


class Model(nn.Module):
    """Single-head causal attention written out by hand; the causal mask is a
    registered (non-parameter) buffer built with torch.tril."""

    def __init__(self, embed_dim, max_seq_len):
        super().__init__()
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.register_buffer(
            "mask", torch.tril(torch.ones(max_seq_len, max_seq_len)).view(1, max_seq_len, max_seq_len)
        )

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C)
        att = att.masked_fill(self.mask[:, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, max_seq_len]
