"""Runs a Kiln tensor-API golden program (tests/golden/torchapi/api_*.dl) under PyTorch.

Usage: /work/peers-venv/bin/python tests/refs/tensor_api_torch.py FILE.dl   (torch 2.15.0, CPU)

The programs use Kiln's global names for torch's functions (`sort(x)` is `torch.sort`);
here every public torch function that is not a Python builtin is put in the program's
globals (and Kiln's modules `linalg`, `autograd` are torch's), so the same text
runs under torch. The output must equal the Kiln .out file:
`diff <(python tests/refs/tensor_api_torch.py F.dl) F.out`. Never run by CI.
"""
import builtins
import sys

import torch


def run(path, modules=None):
    """Runs the Kiln program at `path` under torch (every public torch function as a
    global; Kiln's `linalg`/`autograd` modules are torch's, plus `modules`)."""
    sys.modules["linalg"] = torch.linalg
    sys.modules["autograd"] = torch.autograd
    sys.modules.update(modules or {})
    g = {"__name__": "__main__"}
    for name in dir(torch):
        if not name.startswith("_") and not hasattr(builtins, name):
            g[name] = getattr(torch, name)
    with open(path) as f:
        src = f.read()
    exec(compile(src, path, "exec"), g)


def main():
    run(sys.argv[1])


if __name__ == "__main__":
    main()
