"""Runs tests/golden/tensor/print_format.dl (tensor printing: torch._tensor_str's
formatter, summarisation, suffixes, grad_fn names, Parameter, set_printoptions and
format specs) under PyTorch; its output is tests/golden/tensor/print_format.out, byte
for byte.

Usage: /work/peers-venv/bin/python tests/refs/print_torch.py > tests/golden/tensor/print_format.out
(torch 2.15.0, CPU). The program uses Kiln's global names for torch's functions, so
every public torch name that is not a Python builtin is a global here and `nn` is
torch.nn (tests/refs/tensor_api_torch.py's runner). Never run by CI.
"""
import os

import torch
from tensor_api_torch import run


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    run(os.path.join(here, "..", "golden", "tensor", "print_format.dl"), {"nn": torch.nn})


if __name__ == "__main__":
    main()
