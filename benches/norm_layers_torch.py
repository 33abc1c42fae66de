"""PyTorch eager timings of benches/norm_layers.dl's shapes.
Run: python benches/norm_layers_torch.py  (prints BENCH lines like the Kiln side)."""
import time

import torch
import torch.nn as nn

torch.manual_seed(0)


def measure(f, reps=7):
    f()
    s = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        s.append(time.perf_counter() - t0)
    s.sort()
    return s[len(s) // 2], s[0], s[-1]


def report(name, st):
    print(f"BENCH {name} median={st[0]!r} min={st[1]!r} max={st[2]!r}")


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
