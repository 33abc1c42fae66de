"""Runs a Kiln golden program written with `import torch` (tests/golden/torchapi/
dtypes_*.dl, random_torch.dl, linalg_norms.dl, int32_index.dl, return_types_tuple.dl,
torch_size.dl)
under PyTorch.

Usage: /work/peers-venv/bin/python tests/refs/dtypes_torch.py FILE.dl   (torch 2.15.0, CPU)

The programs are written with PyTorch-shaped imports (`import torch`, `import torch.nn
as nn`), so they run unchanged under torch; dtypes print through
`str(t.dtype).replace("torch.", "")`. The output must equal the Kiln .out file, byte for
byte: `diff <(python tests/refs/dtypes_torch.py F.dl) F.out`. Never run by CI.
"""
import sys


def main():
    path = sys.argv[1]
    with open(path) as f:
        src = f.read()
    exec(compile(src, path, "exec"), {"__name__": "__main__"})


if __name__ == "__main__":
    main()
