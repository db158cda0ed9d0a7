import torch
import torch.nn as nn

batch_size = 8
seq_len = 128
vocab_size = 4096
embed_dim = 128


class Model(nn.Module):
    """Token embedding lookup."""

    def __init__(self, vocab_size, embed_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)

    def forward(self, ids):
        return self.embedding(ids)


def get_inputs():
    ids = torch.randint(0, vocab_size, (batch_size, seq_len), dtype=torch.int64)
    return [ids]


def get_init_inputs():
    return [vocab_size, embed_dim]
