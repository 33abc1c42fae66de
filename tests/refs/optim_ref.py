"""Reference numbers for tests/dl/test_optim.dl, computed with real PyTorch.

Run: /work/venv-torch/bin/python tests/refs/optim_ref.py   (torch 2.15.0, CPU)
Torch is never needed to build or test Kiln; this script only documents where the
numbers written into the Kiln tests come from. Each printed line is labelled; the Kiln
test quotes the label.

Problem: p0 = [0.5, -1.0, 2.0, 0.0]; three steps; at step t the loss is (p * G[t]).sum(),
so the gradient is exactly G[t].
"""
import torch

torch.set_printoptions(precision=10)
P0 = [0.5, -1.0, 2.0, 0.0]
G = [[0.1, -0.2, 0.3, 1.0], [0.4, 0.0, -0.5, -1.0], [-0.3, 0.25, 0.3, 2.0]]


def run(make, steps=G):
    p = torch.nn.Parameter(torch.tensor(P0))
    opt = make([p])
    for g in steps:
        opt.zero_grad()
        (p * torch.tensor(g)).sum().backward()
        opt.step()
    return [float(v) for v in p.detach()]


def show(label, vals):
    print(f"{label}: [{', '.join(repr(v) for v in vals)}]")


print("torch", torch.__version__)
show("sgd", run(lambda ps: torch.optim.SGD(ps, lr=0.1)))
show("sgd momentum wd", run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01)))
show("sgd nesterov", run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)))
show("sgd dampening", run(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.5, dampening=0.3)))
show("adam", run(lambda ps: torch.optim.Adam(ps, lr=0.1)))
show("adam wd", run(lambda ps: torch.optim.Adam(ps, lr=0.1, weight_decay=0.1)))
show("adam betas eps", run(lambda ps: torch.optim.Adam(ps, lr=0.05, betas=(0.5, 0.9), eps=1e-3)))
show("adamw", run(lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.1)))
show("adamw defaults", run(lambda ps: torch.optim.AdamW(ps)))
# 20 Adam steps cycling through G: bias correction far from 1 - b^1.
show("adam 20 steps", run(lambda ps: torch.optim.Adam(ps, lr=0.01), [G[i % 3] for i in range(20)]))


def lrs(make_sched, lr, n):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    sched = make_sched(opt)
    out = []
    for _ in range(n):
        opt.step()
        sched.step()
        out.append(opt.param_groups[0]["lr"])
    return out


show("steplr", lrs(lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5), 1.0, 5))
show("steplr gamma 0.1", lrs(lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.1), 0.3, 10))
show("cosine", lrs(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.0), 0.1, 10))
show("cosine eta_min", lrs(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.01), 0.1, 12))
