"""Checkpoint fixtures for tests/dl/test_checkpoint.dl, written by real PyTorch.

Run from the repository root: /work/peers-venv/bin/python tests/refs/make_ckpt_fixtures.py
(torch 2.15.0, safetensors 0.8). Torch is never needed to build or test Kiln.

1. tests/fixtures/mlp_torch.safetensors: `safetensors.torch.save_file(model.state_dict())`
   of nn.Sequential(Linear(3, 4), Tanh(), Linear(4, 2)) after torch.manual_seed(0); the
   script prints the model's output on a fixed input, which the Kiln test copies.
2. With --check: loads tests/fixtures/mlp_kiln.safetensors (written by the Kiln test
   from its own model with known weights, see test_checkpoint.dl) into the same
   PyTorch model with `load_state_dict(load_file(...))` and prints its output, which
   must equal the Kiln model's (the test prints it as "kiln out").
"""
import sys

import torch
from safetensors.torch import load_file, save_file

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
if "--check" in sys.argv:
    model.load_state_dict(load_file("tests/fixtures/mlp_kiln.safetensors"))
    with torch.no_grad():
        print("torch out of kiln file", model(x).flatten().tolist())
else:
    save_file(model.state_dict(), "tests/fixtures/mlp_torch.safetensors")
    print("keys", sorted(model.state_dict().keys()))
    with torch.no_grad():
        print("out", model(x).flatten().tolist())
