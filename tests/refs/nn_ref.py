"""Reference numbers for tests/dl/test_nn_ref.dl, computed with real PyTorch.

Run: /work/venv-torch/bin/python tests/refs/nn_ref.py   (torch 2.15.0, CPU)
Torch is never needed to build or test Kiln; this script documents where the numbers in
the Kiln tests come from. Every printed line is labelled; the Kiln test quotes the label.

Inputs and weights are built from arange so that Kiln builds the same float32 values:
ramp(shape, s, c) = arange(numel).float().reshape(shape) * s - c.
Large gradients are summarised by two checksums: sum(g) and sum(g * wts), with
wts = (arange(numel) % 7 - 3) as float (integers, so the weighting adds no rounding).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def ramp(shape, s, c):
    n = math.prod(shape)
    return torch.arange(n, dtype=torch.float32).reshape(shape) * s - c


def wts(n):
    return (torch.arange(n) % 7 - 3).float()


def vals(t):
    return "[" + ", ".join(repr(float(v)) for v in t.detach().flatten()) + "]"


def show(label, t):
    print(f"{label}: {vals(t)}")


def checks(label, g):
    g = g.detach().flatten()
    print(f"{label}: [{float(g.sum())!r}, {float((g * wts(g.numel())).sum())!r}]")


def load(m, **params):
    with torch.no_grad():
        for k, v in params.items():
            getattr(m, k).copy_(v)
    return m


print("torch", torch.__version__)

# Linear(3, 2): y = x W^T + b; loss = sum(y * C).
lin = load(nn.Linear(3, 2), weight=ramp((2, 3), 0.1, 0.3), bias=torch.tensor([0.5, -0.5]))
x = torch.tensor([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]], requires_grad=True)
y = lin(x)
(y * ramp((2, 2), 1.0, -1.0)).sum().backward()
show("linear y", y)
show("linear dW", lin.weight.grad)
show("linear db", lin.bias.grad)
show("linear dx", x.grad)

# LayerNorm(3) with affine weights; loss = sum(y * C).
ln = load(nn.LayerNorm(3), weight=torch.tensor([1.5, -0.5, 2.0]), bias=torch.tensor([0.1, 0.2, -0.3]))
x = torch.tensor([[1.0, 2.0, 4.0], [-0.5, 0.0, 3.0]], requires_grad=True)
y = ln(x)
(y * ramp((2, 3), 0.5, 1.0)).sum().backward()
show("layernorm y", y)
show("layernorm dx", x.grad)
show("layernorm dweight", ln.weight.grad)
show("layernorm dbias", ln.bias.grad)

# Embedding(5, 3): rows 4, 0, 4, 2; the repeated row accumulates its gradient.
emb = load(nn.Embedding(5, 3), weight=ramp((5, 3), 0.1, 0.7))
out = emb(torch.tensor([4, 0, 4, 2]))
(out * ramp((4, 3), 1.0, 5.0)).sum().backward()
show("embedding out", out)
show("embedding dweight", emb.weight.grad)

# Conv2d(2, 2, 3, stride=2, padding=1) on (1, 2, 5, 5).
conv = load(nn.Conv2d(2, 2, 3, stride=2, padding=1), weight=ramp((2, 2, 3, 3), 0.01, 0.2),
            bias=torch.tensor([0.05, -0.1]))
x = ramp((1, 2, 5, 5), 0.03, 1.0).requires_grad_()
y = conv(x)
(y * ramp((1, 2, 3, 3), 0.25, 2.0)).sum().backward()
show("conv2d y", y)
checks("conv2d dweight checks", conv.weight.grad)
show("conv2d dbias", conv.bias.grad)
checks("conv2d dx checks", x.grad)

# MaxPool2d(2) and MaxPool2d(3, stride=1, padding=1) on a (1, 1, 4, 4) ramp with a
# permutation so that the maximum is not always the last element of a window.
perm = torch.tensor([5, 12, 3, 9, 0, 14, 7, 1, 10, 6, 15, 2, 8, 13, 4, 11])
x = (perm.float() * 0.5 - 3.0).reshape(1, 1, 4, 4).requires_grad_()
y = nn.MaxPool2d(2)(x)
(y * ramp((1, 1, 2, 2), 1.0, -1.0)).sum().backward()
show("maxpool y", y)
show("maxpool dx", x.grad)
x.grad = None
y = nn.MaxPool2d(3, stride=1, padding=1)(x)
(y * ramp((1, 1, 4, 4), 1.0, -1.0)).sum().backward()
show("maxpool3 y", y)
show("maxpool3 dx", x.grad)


# Recurrent cells (gate order: GRU r, z, n; LSTM i, f, g, o) with
# W = ramp((n, m), s, 0.3), b = arange(n) * s - 0.1.
def cell(c, n, m, s, sb=None):
    sb = s if sb is None else sb
    return load(c, weight_ih=ramp((n, m), s, 0.3), weight_hh=ramp((n, 2), s, 0.3),
                bias_ih=ramp((n,), sb, 0.1), bias_hh=ramp((n,), sb, 0.1))


x0 = torch.tensor([[0.5, -1.0, 2.0]])
h0 = torch.tensor([[0.1, -0.2]])
for name, c in [("rnn", cell(nn.RNNCell(3, 2), 2, 3, 0.1, 0.05)),
                ("gru", cell(nn.GRUCell(3, 2), 6, 3, 0.05))]:
    x = x0.clone().requires_grad_()
    h = h0.clone().requires_grad_()
    out = c(x, h)
    (out * torch.tensor([[1.0, -2.0]])).sum().backward()
    show(f"{name} h", out)
    show(f"{name} dx", x.grad)
    show(f"{name} dh", h.grad)
    checks(f"{name} dweight_ih checks", c.weight_ih.grad)
    checks(f"{name} dweight_hh checks", c.weight_hh.grad)
    checks(f"{name} dbias_hh checks", c.bias_hh.grad)
lstm = cell(nn.LSTMCell(3, 2), 8, 3, 0.03)
x = x0.clone().requires_grad_()
h2, c2 = lstm(x, (h0, torch.tensor([[0.3, -0.4]])))
(h2 * torch.tensor([[1.0, -2.0]]) + c2 * torch.tensor([[0.5, 3.0]])).sum().backward()
show("lstm h", h2)
show("lstm c", c2)
show("lstm dx", x.grad)
checks("lstm dweight_ih checks", lstm.weight_ih.grad)
checks("lstm dbias_ih checks", lstm.bias_ih.grad)

# MSELoss, reductions and gradient.
a = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.5]], requires_grad=True)
b = torch.tensor([[0.5, -1.0, 0.5], [1.0, 2.0, -1.0]])
loss = nn.MSELoss()(a, b)
loss.backward()
print(f"mse mean: {loss.item()!r}")
print(f"mse sum: {float(F.mse_loss(a, b, reduction='sum'))!r}")
show("mse none", F.mse_loss(a, b, reduction="none"))
show("mse da", a.grad)

# CrossEntropyLoss with int64 class targets; gradient of the mean loss.
z = ramp((3, 4), 0.7, 2.0).sin().requires_grad_()
t = torch.tensor([3, 0, 1])
loss = nn.CrossEntropyLoss()(z, t)
loss.backward()
show("ce logits", z)
print(f"ce mean: {loss.item()!r}")
print(f"ce sum: {float(F.cross_entropy(z, t, reduction='sum'))!r}")
show("ce none", F.cross_entropy(z, t, reduction="none"))
show("ce dlogits", z.grad)
z1 = torch.tensor([0.5, -1.0, 2.0, 0.0], requires_grad=True)
l1 = F.cross_entropy(z1, torch.tensor(1))
l1.backward()
print(f"ce 1d: {l1.item()!r}")
show("ce 1d dlogits", z1.grad)

# Activations: values and gradients of sum(f(x) * x) at a fixed grid.
grid = [-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]
for name, f in [("relu", nn.ReLU()), ("tanh", nn.Tanh()), ("sigmoid", nn.Sigmoid()),
                ("gelu", nn.GELU()), ("gelu tanh", nn.GELU(approximate="tanh"))]:
    x = torch.tensor(grid, requires_grad=True)
    y = f(x)
    (y * torch.tensor(grid)).sum().backward()
    show(f"{name} y", y)
    show(f"{name} dx", x.grad)
s = ramp((2, 3), 0.9, 1.0)
show("softmax", F.softmax(s, dim=1))
show("log_softmax", F.log_softmax(s, dim=1))

# Dropout in training mode keeps x / (1 - p) or zeroes it.
torch.manual_seed(0)
print(f"dropout values: {sorted(set(F.dropout(torch.ones(1000), 0.25).tolist()))}")

# Default initialization (torch.nn.init.kaiming_uniform_(w, a=sqrt(5)) and the bias rule
# of Linear/Conv2d; RNN cells use uniform(+-1/sqrt(hidden))). The bound is derived with
# torch's own helpers, and the largest |w| of a large layer shows it is attained.
gain = nn.init.calculate_gain("leaky_relu", math.sqrt(5))
torch.manual_seed(0)
for name, m in [("linear 100 50", nn.Linear(100, 50)), ("conv2d 3 8 3", nn.Conv2d(3, 8, 3)),
                ("conv2d 4 6 (2, 5)", nn.Conv2d(4, 6, (2, 5)))]:
    fan_in, _ = nn.init._calculate_fan_in_and_fan_out(m.weight)
    bound = gain * math.sqrt(3.0 / fan_in)
    print(f"kaiming {name}: fan_in {fan_in} bound {bound!r} bias bound {1 / math.sqrt(fan_in)!r} "
          f"max|w| {float(m.weight.abs().max())!r} max|b| {float(m.bias.abs().max())!r}")
for name, m in [("rnncell 10 20", nn.RNNCell(10, 20)), ("grucell 10 20", nn.GRUCell(10, 20)),
                ("lstmcell 10 20", nn.LSTMCell(10, 20))]:
    print(f"init {name}: bound {1 / math.sqrt(20)!r} max|p| "
          f"{max(float(p.abs().max()) for p in m.parameters())!r}")
e = nn.Embedding(1000, 100)
print(f"init embedding: mean {float(e.weight.mean())!r} std {float(e.weight.std())!r}")
n2 = nn.LayerNorm(4)
show("init layernorm weight", n2.weight)
show("init layernorm bias", n2.bias)
print("parameter names:", [n for n, _ in nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)).named_parameters()])
print("lstm names:", [n for n, _ in lstm.named_parameters()])
