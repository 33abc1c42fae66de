"""PyTorch reference for signed zeros in max/min (issue 29). Run:
/work/peers-venv/bin/python tests/refs/extreme_zeros_ref.py > tests/refs/extreme_zeros_ref.out
(torch 2.15, CPU; the committed .out was printed on an AVX512 machine, 2 threads).

1. `rows`: max()/min() full and max(-1)/min(-1) values and indices of small rows holding
   -0.0, 0.0 and NaN (`mixed`: both zeros). max(dim)/min(dim) give the element at the
   index (the first zero): Kiln matches those columns exactly, eagerly and compiled
   (compile_varsize.rs `max_min_over_signed_zeros_and_nan`; the golden
   tests/golden/torchapi/extreme_zeros.dl covers them and amax/amin gradients byte for
   byte). Kiln's max()/min() fold with IEEE 754-2019 maximum/minimum (0.0 for max, -0.0
   for min in a mixed row) eagerly and compiled alike.
2. `blocks`: why no fixed rule can equal PyTorch's sign for an elementwise
   maximum/minimum of -0.0 and 0.0 or for max()/amax() of a mixed row: it follows the
   position in its vector loop, not the values. maximum(a, b) returns b on a tie inside
   16-element vector blocks and a in the scalar tail (+ = 0.0, - = -0.0); full
   reductions flip with the length. Kiln returns 0.0 for maximum and -0.0 for minimum
   (IEEE 754-2019) at every position, which PyTorch's vector blocks agree with for
   maximum(-0.0, 0.0)."""
import math

import torch

ROWS = [[-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0], [0.0, 0.0], [1.0, math.nan, 2.0],
        [math.nan, -0.0, 0.0], [-1.0, -0.0, -2.0], [3.0, 0.0, 3.0]]


def show(v):
    return "nan" if math.isnan(v) else str(v)


def signs(t):
    return "".join("-" if math.copysign(1, v) < 0 else "+" for v in t.tolist())


print("rows: max() min() max(-1) argmax min(-1) argmin")
for r in ROWS:
    x = torch.tensor(r)
    mixed = any(math.copysign(1, v) < 0 and v == 0 for v in r) and any(
        math.copysign(1, v) > 0 and v == 0 for v in r)
    mx, imx = x.max(-1)
    mn, imn = x.min(-1)
    print(r, show(x.max().item()), show(x.min().item()), show(mx.item()), int(imx),
          show(mn.item()), int(imn), "mixed" if mixed else "")

print("blocks: n maximum(-0,+0) maximum(+0,-0) minimum(-0,+0) minimum(+0,-0)")
for n in [1, 9, 16, 20, 33]:
    a, b = torch.full((n,), -0.0), torch.zeros(n)
    print(n, signs(torch.maximum(a, b)), signs(torch.maximum(b, a)),
          signs(torch.minimum(a, b)), signs(torch.minimum(b, a)))
print("blocks: n max() amax() of [-0.0] * (n // 2) + [0.0] * (n - n // 2)")
for n in [2, 31, 32, 64]:
    x = torch.tensor([-0.0] * (n // 2) + [0.0] * (n - n // 2))
    print(n, show(x.max().item()), show(x.amax().item()), show(x.max(0)[0].item()))
