"""PyTorch reference for compile_varsize.rs `max_min_over_signed_zeros_and_nan`: max/min
over rows holding -0.0, 0.0 and NaN, full and along the last dim (values and indices).
Run: /work/peers-venv/bin/python tests/refs/extreme_zeros_ref.py (torch 2.15, CPU).

Kiln agrees on every index and on every value except the sign of a zero result in a
row holding both zeros: there PyTorch's `max(dim)` takes the first zero's sign and its
`max()` a sign that depends on its vector path (the last zero's below 8 elements, not
above), while Kiln folds with IEEE 754-2019 maximum/minimum (-0.0 < 0.0) eagerly and
compiled, so max gives 0.0 and min -0.0 (`mixed` marks those rows)."""
import math

import torch

ROWS = [[-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0], [0.0, 0.0], [1.0, math.nan, 2.0],
        [math.nan, -0.0, 0.0], [-1.0, -0.0, -2.0], [3.0, 0.0, 3.0]]


def show(v):
    return "nan" if math.isnan(v) else str(v)


for r in ROWS:
    x = torch.tensor(r)
    mixed = any(math.copysign(1, v) < 0 and v == 0 for v in r) and any(
        math.copysign(1, v) > 0 and v == 0 for v in r)
    mx, imx = x.max(-1)
    mn, imn = x.min(-1)
    print(r, show(x.max().item()), show(x.min().item()), show(mx.item()), int(imx),
          show(mn.item()), int(imn), "mixed" if mixed else "")
