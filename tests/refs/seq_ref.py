"""Reference numbers for tests/dl/test_seq_ref.dl (RNN/LSTM/GRU over sequences, packed
sequences), computed with real PyTorch.

Run: /work/peers-venv/bin/python tests/refs/seq_ref.py   (torch 2.15.0, CPU)
Torch is never needed to build or test Kiln; this script documents where the numbers in
the Kiln test come from. Every printed line is labelled; the Kiln test quotes the label.

Every parameter and input is a float32 wave built the same way on both sides:
wave(shape, k) = sin(arange(numel).float() * 0.37 + k).reshape(shape) * 0.5, and the
parameters of a module get k = 1, 2, 3, ... in named_parameters() order.
Results are summarised by checksums: sum(t) and sum(t * wts), wts = arange(n) % 7 - 3.
"""
import math

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


def wave(shape, k):
    n = math.prod(shape)
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 0.37 + k) * 0.5).reshape(shape)


def wts(n):
    return (torch.arange(n) % 7 - 3).float()


def checks(label, g):
    g = g.detach().flatten()
    print(f"{label}: [{float(g.sum())!r}, {float((g * wts(g.numel())).sum())!r}]")


def load(m):
    with torch.no_grad():
        for k, (_, p) in enumerate(m.named_parameters()):
            p.copy_(wave(tuple(p.shape), k + 1))
    return m


def weigh(t, k):
    return (t * wave(tuple(t.shape), k)).sum()


print("torch", torch.__version__)

# LSTM(3, 4, num_layers=2, bidirectional=True), x [5, 2, 3], h0/c0 given.
m = load(nn.LSTM(3, 4, num_layers=2, bidirectional=True))
x = wave((5, 2, 3), 0.5).requires_grad_()
h0 = wave((4, 2, 4), 0.7).requires_grad_()
c0 = wave((4, 2, 4), 0.9).requires_grad_()
out, (hn, cn) = m(x, (h0, c0))
(weigh(out, 11) + weigh(hn, 12) + weigh(cn, 13)).backward()
checks("lstm out", out)
checks("lstm hn", hn)
checks("lstm cn", cn)
checks("lstm dx", x.grad)
checks("lstm dh0", h0.grad)
checks("lstm dc0", c0.grad)
for name, p in m.named_parameters():
    checks(f"lstm d{name}", p.grad)

# GRU(3, 4, num_layers=2, batch_first=True), x [2, 5, 3], no h0.
m = load(nn.GRU(3, 4, num_layers=2, batch_first=True))
x = wave((2, 5, 3), 0.5).requires_grad_()
out, hn = m(x)
(weigh(out, 11) + weigh(hn, 12)).backward()
checks("gru out", out)
checks("gru hn", hn)
checks("gru dx", x.grad)
for name, p in m.named_parameters():
    checks(f"gru d{name}", p.grad)

# RNN(3, 4, nonlinearity='relu', bidirectional=True, bias=False), unbatched x [5, 3].
m = load(nn.RNN(3, 4, nonlinearity="relu", bidirectional=True, bias=False))
x = wave((5, 3), 0.5).requires_grad_()
out, hn = m(x)
(weigh(out, 11) + weigh(hn, 12)).backward()
checks("rnn out", out)
checks("rnn hn", hn)
checks("rnn dx", x.grad)
for name, p in m.named_parameters():
    checks(f"rnn d{name}", p.grad)

# Packed: lengths [3, 5, 2] unsorted, bidirectional LSTM with h0/c0.
m = load(nn.LSTM(3, 4, bidirectional=True))
x = wave((5, 3, 3), 0.5).requires_grad_()
h0 = wave((2, 3, 4), 0.7).requires_grad_()
c0 = wave((2, 3, 4), 0.9).requires_grad_()
pk = pack_padded_sequence(x, [3, 5, 2], enforce_sorted=False)
checks("packed data", pk.data)
print("packed batch_sizes:", pk.batch_sizes.tolist())
print("packed sorted_indices:", pk.sorted_indices.tolist())
po, (hn, cn) = m(pk, (h0, c0))
out, lens = pad_packed_sequence(po, batch_first=True)
print("packed lens:", lens.tolist())
(weigh(out, 11) + weigh(hn, 12) + weigh(cn, 13)).backward()
checks("packed out", out)
checks("packed hn", hn)
checks("packed cn", cn)
checks("packed dx", x.grad)
checks("packed dh0", h0.grad)
for name, p in m.named_parameters():
    checks(f"packed d{name}", p.grad)

# Packed GRU, sorted lengths [4, 4, 1], batch_first input [3, 4, 3].
m = load(nn.GRU(3, 4, bidirectional=True, batch_first=True))
x = wave((3, 4, 3), 0.5).requires_grad_()
po, hn = m(pack_padded_sequence(x, torch.tensor([4, 4, 1]), batch_first=True))
out, lens = pad_packed_sequence(po, batch_first=True, total_length=5)
(weigh(out, 11) + weigh(hn, 12)).backward()
print("packed gru out shape:", list(out.shape))
checks("packed gru out", out)
checks("packed gru hn", hn)
checks("packed gru dx", x.grad)

# pad_sequence, left padding, batch_first.
p = pad_sequence([wave((2, 3), 1.0), wave((4, 3), 2.0)], batch_first=True, padding_value=-1.0,
                 padding_side="left")
print("pad_sequence shape:", list(p.shape))
checks("pad_sequence", p)
