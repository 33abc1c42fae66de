"""The final losses of examples/lstm_classifier.dl and examples/tiny_transformer_lm.dl,
computed with real PyTorch from the same deterministic data and initial weights (the
k-th parameter in named_parameters() order, k = 1, 2, ...: a matrix is
wave(shape, k) = sin(arange(numel) * 0.37 + k) * 0.5, a vector is 0 for a bias, else 1)
and the same Adam steps. tests/stdlib_examples.rs compares
the examples' printed "final loss" with the numbers printed here.

Run: /work/peers-venv/bin/python tests/refs/seq_examples_ref.py   (torch 2.15.0, CPU)
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence


def wave(shape, k):
    n = math.prod(shape)
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 0.37 + k) * 0.5).reshape(shape)


def load(m):
    with torch.no_grad():
        for k, (name, p) in enumerate(m.named_parameters()):
            if p.ndim > 1:
                p.copy_(wave(tuple(p.shape), k + 1))
            else:
                p.fill_(0.0 if name.endswith("bias") else 1.0)


def train(model, loss_fn, steps, lr):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    first = None
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    with torch.no_grad():
        return first, loss_fn().item()


# examples/lstm_classifier.dl
N, FREQS = 24, [0.4, 1.1, 2.3]
seqs, labels = [], []
for i in range(N):
    c = i % 3
    n = 3 + (i * 5) % 6
    t = torch.arange(n).float() * FREQS[c] + i * 0.7
    seqs.append(torch.stack([t.sin(), t.cos()], 1))
    labels.append(c)
lengths = [s.shape[0] for s in seqs]
padded = pad_sequence(seqs, batch_first=True)
target = torch.tensor(labels)


class Classifier(nn.Module):
    def __init__(self, hidden, classes):
        super().__init__()
        self.lstm = nn.LSTM(2, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, c) = self.lstm(packed)
        return self.head(torch.cat([h[0], h[1]], 1))


model = Classifier(8, 3)
load(model)
first, final = train(model, lambda: F.cross_entropy(model(padded, lengths), target), 12, 0.05)
print(f"lstm_classifier first loss {first:.6f}")
print(f"lstm_classifier final loss {final:.6f}")

# examples/tiny_transformer_lm.dl
TEXT = "the quick brown fox jumps over the lazy dog. " * 4
T, D = 12, 16
vocab = sorted(set(TEXT))
index = {ch: i for i, ch in enumerate(vocab)}
ids = [index[ch] for ch in TEXT]
starts = list(range(0, len(ids) - T - 1, 7))
x = torch.tensor([ids[s:s + T] for s in starts])
y = torch.tensor([ids[s + 1:s + T + 1] for s in starts])


class TinyLM(nn.Module):
    def __init__(self, vocab_size, d_model, context):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(context, d_model))
        self.embed = nn.Embedding(vocab_size, d_model)
        layer = nn.TransformerEncoderLayer(d_model, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab_size)
        self.mask = nn.Transformer.generate_square_subsequent_mask(context)

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos
        h = self.encoder(h, mask=self.mask, is_causal=True)
        return self.head(h)


model = TinyLM(len(vocab), D, T)
load(model)
V = len(vocab)
first, final = train(model, lambda: F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1)), 15, 0.01)
print(f"tiny_transformer_lm first loss {first:.6f}")
print(f"tiny_transformer_lm final loss {final:.6f}")
