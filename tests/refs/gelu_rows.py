"""Truth for the exact GELU's float32 kernels (tests/ops_table.rs, `gelu_rows_match_pytorch`):
gelu(x) and its gradient (dy = 1) for 256 values, a multiple of the vector width so every
element takes PyTorch's vectorized path (its `Vectorized<float>::erf`, Abramowitz & Stegun
7.1.26, and its vectorized exp). One line per value: `x gelu grad`, each repr(float).
Run: /work/peers-venv/bin/python tests/refs/gelu_rows.py > tests/refs/gelu_rows.out
(torch 2.15.0)."""
import torch

SPECIAL = [0.0, -0.0, 1e-6, -1e-6, 1e-3, -1e-3, 0.1, -0.1, 0.5, -0.5, 7.5, -7.5, 10.0,
           -10.0, 20.0, -20.0]
x = torch.cat([torch.linspace(-6.0, 6.0, 240), torch.tensor(SPECIAL)]).requires_grad_()
y = torch.nn.functional.gelu(x)
y.backward(torch.ones_like(y))
for a, b, c in zip(x.tolist(), y.tolist(), x.grad.tolist()):
    print(repr(float(a)), repr(float(b)), repr(float(c)))
