"""PyTorch eager timings of benches/norm_layers.dl's shapes.
Run: python benches/norm_layers_torch.py  (prints BENCH lines like the Kiln side)."""
import torch
import torch.nn as nn
from torch_timing import measure, report

torch.manual_seed(0)


def step(m, x):
    return lambda: m(x).sum().backward()


def forward(m, x):
    def run():
        with torch.no_grad():
            m(x)
    return run


x4 = torch.randn(64, 32, 28, 28, requires_grad=True)
x2 = torch.randn(512, 256, requires_grad=True)
bn2, bn1 = nn.BatchNorm2d(32), nn.BatchNorm1d(256)
gn, ln = nn.GroupNorm(8, 32), nn.LayerNorm(256)
report("bn2d_train_torch", measure(step(bn2, x4)))
report("bn1d_train_torch", measure(step(bn1, x2)))
bn2.eval()
report("bn2d_eval_torch", measure(forward(bn2, x4)))
report("groupnorm_torch", measure(step(gn, x4)))
report("layernorm_torch", measure(step(ln, x2)))
