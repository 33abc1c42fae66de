"""Runs a Kiln golden program (tests/golden/stdlib/*.dl) under real PyTorch.

Usage: /work/venv-torch/bin/python tests/refs/golden_torch.py FILE.dl   (torch 2.15.0, CPU)

The stdlib goldens are written in the common subset of Kiln and Python, so the same text
runs here with torch behind Kiln's names (`tensor`, `arange`, `nn`, `optim`, ...). Lines
that only exercise PyTorch-compatible behaviour must print the same text as the Kiln
.out file; `diff <(python tests/refs/golden_torch.py F.dl) F.out` shows where they differ
(a Kiln-only line, such as a module repr, is checked by hand instead). Never run by CI.
"""
import math
import sys
import tempfile
import types

import torch
import torch.nn as tnn
import torch.nn.functional as F


def kiln_nn():
    """Kiln's `nn` package: torch.nn's names, the functional forms Kiln also exposes at
    `nn.` (linear, relu, ...), and the submodules nn.functional, nn.init and nn.utils."""
    m = types.ModuleType("nn")
    for name in dir(tnn):
        if not name.startswith("_"):
            setattr(m, name, getattr(tnn, name))
    m.linear = F.linear
    m.dropout = F.dropout
    m.layer_norm = F.layer_norm
    m.mse_loss = F.mse_loss
    m.cross_entropy = F.cross_entropy
    m.relu = F.relu
    m.tanh = torch.tanh
    m.sigmoid = torch.sigmoid
    m.gelu = F.gelu
    m.softmax = F.softmax
    m.log_softmax = F.log_softmax
    m.functional = F
    m.init = tnn.init
    m.utils = tnn.utils
    sys.modules["nn.functional"] = F
    sys.modules["nn.init"] = tnn.init
    sys.modules["nn.utils"] = tnn.utils
    return m


def kiln_optim():
    m = types.ModuleType("optim")
    m.SGD = torch.optim.SGD
    m.Adam = torch.optim.Adam
    m.AdamW = torch.optim.AdamW
    m.StepLR = torch.optim.lr_scheduler.StepLR
    m.CosineLR = torch.optim.lr_scheduler.CosineAnnealingLR
    m.CosineAnnealingLR = torch.optim.lr_scheduler.CosineAnnealingLR
    return m


def kiln_data():
    """Kiln's `data` module: torch.utils.data's names, with torch.Generator."""
    import torch.utils.data as tud
    m = types.ModuleType("data")
    for name in dir(tud):
        if not name.startswith("_"):
            setattr(m, name, getattr(tud, name))
    m.Generator = torch.Generator
    return m


def main():
    path = sys.argv[1]
    sys.modules["nn"] = kiln_nn()
    sys.modules["optim"] = kiln_optim()
    sys.modules["data"] = kiln_data()
    g = {
        "__name__": "__main__",
        "math": math,
        "tensor": torch.tensor,
        "arange": torch.arange,
        "zeros": torch.zeros,
        "ones": torch.ones,
        "randn": torch.randn,
        "relu": torch.relu,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
        "manual_seed": torch.manual_seed,
        "no_grad": torch.no_grad,
        "float32": torch.float32,
        "full": torch.full,
        "cat": torch.cat,
        "stack": torch.stack,
        "where": torch.where,
        "exp": torch.exp,
        "log": torch.log,
        "rand": torch.rand,
        "Tensor": torch.Tensor,
        "eye": torch.eye,
        "int64": torch.int64,
        "randperm": torch.randperm,
        "argv": [path, tempfile.mkdtemp(prefix="kiln_golden_torch_")],
    }
    with open(path) as f:
        src = f.read()
    exec(compile(src, path, "exec"), g)


if __name__ == "__main__":
    main()
