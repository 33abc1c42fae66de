"""Reference numbers for tests/dl/test_seq_attn_ref.dl (scaled_dot_product_attention,
MultiheadAttention, Transformer encoder/decoder layers and stacks), computed with real
PyTorch.

Run: /work/peers-venv/bin/python tests/refs/seq_attn_ref.py   (torch 2.15.0, CPU)
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
import torch.nn.functional as F


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


def leaf(shape, k):
    return wave(shape, k).requires_grad_()


def sdpa_case(label, qs, ks, vs, **kw):
    q, k, v = leaf(qs, 0.5), leaf(ks, 0.7), leaf(vs, 0.9)
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    weigh(out, 11).backward()
    checks(f"{label} out", out)
    checks(f"{label} dq", q.grad)
    checks(f"{label} dk", k.grad)
    checks(f"{label} dv", v.grad)


print("torch", torch.__version__)

sdpa_case("sdpa plain", (2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6))
keep = (torch.arange(35).reshape(5, 7) % 3 != 1)
keep[2] = False  # a row that sees no key: zeros
sdpa_case("sdpa boolmask", (2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), attn_mask=keep)
sdpa_case("sdpa floatmask", (2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), attn_mask=wave((2, 1, 5, 7), 3.0))
sdpa_case("sdpa causal", (2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), is_causal=True, scale=0.3)
sdpa_case("sdpa broadcast", (2, 3, 5, 4), (3, 7, 4), (1, 3, 7, 6))
sdpa_case("sdpa big causal", (1, 2, 70, 8), (1, 2, 130, 8), (1, 2, 130, 5), is_causal=True)
sdpa_case("sdpa big mask", (130, 8), (150, 8), (150, 3), attn_mask=wave((130, 150), 2.0))

# MultiheadAttention(8, 2), seq-first, key padding mask and a float attn_mask.
m = load(nn.MultiheadAttention(8, 2))
print("mha names:", [n for n, _ in m.named_parameters()])
q, k, v = leaf((5, 2, 8), 0.5), leaf((6, 2, 8), 0.7), leaf((6, 2, 8), 0.9)
kpm = torch.tensor([[False, False, True, False, False, True], [False] * 6])
am = wave((5, 6), 4.0)
out, w = m(q, k, v, key_padding_mask=kpm, attn_mask=am)
(weigh(out, 11) + weigh(w, 12)).backward()
checks("mha out", out)
checks("mha weights", w)
checks("mha dq", q.grad)
checks("mha dk", k.grad)
for name, p in m.named_parameters():
    checks(f"mha d{name}", p.grad)
out2, w2 = m(q, k, v, key_padding_mask=kpm, attn_mask=am, need_weights=False)
print("mha noweights same, no weights:", [bool((out2 - out).abs().max() < 1e-6), w2 is None])
_, w3 = m(q, k, v, average_attn_weights=False)
checks("mha weights per head", w3)

# kdim/vdim differ, batch_first, unbatched input.
m = load(nn.MultiheadAttention(6, 3, kdim=5, vdim=4, batch_first=True))
print("mha kv names:", [n for n, _ in m.named_parameters()])
q, k, v = leaf((4, 6), 0.5), leaf((3, 5), 0.7), leaf((3, 4), 0.9)
out, w = m(q, k, v)
weigh(out, 11).backward()
checks("mha kv out", out)
checks("mha kv weights", w)
checks("mha kv dq", q.grad)
for name, p in m.named_parameters():
    checks(f"mha kv d{name}", p.grad)

# TransformerEncoder of 2 post-norm layers + final LayerNorm, causal mask, key padding.
layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
enc = load(nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=False))
print("enc names:", [n for n, _ in enc.named_parameters()])
x = leaf((2, 5, 8), 0.5)
mask = nn.Transformer.generate_square_subsequent_mask(5)
kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
out = enc(x, mask=mask, src_key_padding_mask=kpm)
weigh(out, 11).backward()
checks("enc out", out)
checks("enc dx", x.grad)
for name, p in enc.named_parameters():
    checks(f"enc d{name}", p.grad)

# Pre-norm encoder layer with gelu, seq-first, is_causal.
layer = load(nn.TransformerEncoderLayer(8, 4, dim_feedforward=12, dropout=0.0, activation="gelu", norm_first=True))
x = leaf((6, 2, 8), 0.5)
out = layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(6), is_causal=True)
weigh(out, 11).backward()
checks("prenorm out", out)
checks("prenorm dx", x.grad)
for name, p in layer.named_parameters():
    checks(f"prenorm d{name}", p.grad)

# TransformerDecoder of 2 layers, causal target mask, memory key padding.
layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
dec = load(nn.TransformerDecoder(layer, 2))
print("dec names:", [n for n, _ in dec.named_parameters()])
t, mem = leaf((2, 4, 8), 0.5), leaf((2, 6, 8), 0.7)
mkpm = torch.tensor([[False] * 6, [False, False, False, False, True, True]])
out = dec(t, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), memory_key_padding_mask=mkpm)
weigh(out, 11).backward()
checks("dec out", out)
checks("dec dtgt", t.grad)
checks("dec dmem", mem.grad)
for name, p in dec.named_parameters():
    checks(f"dec d{name}", p.grad)
