"""Truth for every row of the binary op table (tests/ops_table.rs,
`binary_rows_match_pytorch`): each op as the torch function of its name, on float32,
int64 and bool operands. Run: /work/peers-venv/bin/python tests/refs/binary_rows.py
> tests/refs/binary_rows.out (torch 2.15.0)."""
import torch

FA = [0.7, -1.3, 2.5, -0.0, 3.0]
FB = [1.9, 0.6, -0.8, 2.0, 3.0]
IA = [7, -7, 5, 0, -3]
IB = [2, 3, 1, 4, 3]
BA = [True, True, False, False]
BB = [True, False, True, False]
NAMES = ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum",
         "minimum", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or",
         "bitwise_xor"]


def show(t):
    if t.dtype == torch.bool:
        return " ".join("1" if v else "0" for v in t.tolist())
    if t.dtype == torch.float32:
        return " ".join(repr(float(v)) for v in t.tolist())
    return " ".join(str(v) for v in t.tolist())


for name in NAMES:
    f = getattr(torch, name)
    for tag, a, b, dt in [("f32", FA, FB, torch.float32), ("i64", IA, IB, torch.int64),
                          ("bool", BA, BB, torch.bool)]:
        try:
            out = f(torch.tensor(a, dtype=dt), torch.tensor(b, dtype=dt))
            print(name, tag, str(out.dtype).replace("torch.", ""), show(out))
        except RuntimeError:
            print(name, tag, "error")
