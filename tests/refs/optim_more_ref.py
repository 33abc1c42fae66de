"""Reference numbers for tests/dl/test_optim_groups.dl and tests/dl/test_optim_more.dl,
computed with real PyTorch (CPU, default single-tensor paths).

Run: /work/peers-venv/bin/python tests/refs/optim_more_ref.py   (torch 2.15.0)
Torch is never needed to build or test Kiln; each printed line is labelled and the Kiln
test quotes the label.

Problem (as tests/refs/optim_ref.py): p0 = [0.5, -1.0, 2.0, 0.0]; at step t the loss is
(p * G[t % 3]).sum(), so the gradient is exactly G[t % 3].
"""
import torch

P0 = [0.5, -1.0, 2.0, 0.0]
G = [[0.1, -0.2, 0.3, 1.0], [0.4, 0.0, -0.5, -1.0], [-0.3, 0.25, 0.3, 2.0]]


def run(make, steps=3):
    p = torch.nn.Parameter(torch.tensor(P0))
    opt = make([p])
    for t in range(steps):
        opt.zero_grad()
        (p * torch.tensor(G[t % 3])).sum().backward()
        opt.step()
    return [float(v) for v in p.detach()]


def show(label, vals):
    print(f"{label}: [{', '.join(repr(v) for v in vals)}]")


O = torch.optim
print("torch", torch.__version__)
show("sgd maximize", run(lambda ps: O.SGD(ps, lr=0.1, momentum=0.9, maximize=True)))
show("adam amsgrad", run(lambda ps: O.Adam(ps, lr=0.1, amsgrad=True), 8))
show("adam maximize", run(lambda ps: O.Adam(ps, lr=0.1, maximize=True)))
show("rmsprop", run(lambda ps: O.RMSprop(ps, lr=0.01), 5))
show("rmsprop centered momentum wd", run(lambda ps: O.RMSprop(ps, lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1), 5))
show("adagrad", run(lambda ps: O.Adagrad(ps, lr=0.1), 5))
show("adagrad decay init wd", run(lambda ps: O.Adagrad(ps, lr=0.1, lr_decay=0.05, initial_accumulator_value=0.2, weight_decay=0.1), 5))
show("adamax", run(lambda ps: O.Adamax(ps, lr=0.05), 5))
show("adamax wd", run(lambda ps: O.Adamax(ps, lr=0.05, betas=(0.8, 0.9), weight_decay=0.1), 5))
show("nadam", run(lambda ps: O.NAdam(ps, lr=0.05), 5))
show("nadam decoupled", run(lambda ps: O.NAdam(ps, lr=0.05, weight_decay=0.1, momentum_decay=0.01, decoupled_weight_decay=True), 5))
show("radam", run(lambda ps: O.RAdam(ps, lr=0.05), 8))
show("radam wd", run(lambda ps: O.RAdam(ps, lr=0.05, weight_decay=0.1), 8))
show("radam rectified", run(lambda ps: O.RAdam(ps, lr=0.05, betas=(0.9, 0.5)), 8))


# Parameter groups: two parameters, per-group lr / weight_decay / momentum.
def groups():
    a = torch.nn.Parameter(torch.tensor([0.5, -1.0]))
    b = torch.nn.Parameter(torch.tensor([2.0, 0.0]))
    opt = O.SGD([{"params": [a]}, {"params": [b], "lr": 0.01, "momentum": 0.5}], lr=0.1, weight_decay=0.1)
    for t in range(3):
        opt.zero_grad()
        g = torch.tensor(G[t])
        ((a * g[:2]).sum() + (b * g[2:]).sum()).backward()
        opt.step()
    return [float(v) for v in a.detach()] + [float(v) for v in b.detach()]


show("sgd groups", groups())


# LBFGS on f(x, y) = (1 - x)^2 + 5 (y - x^2)^2 from (-1, 1.5).
def lbfgs(**kw):
    p = torch.nn.Parameter(torch.tensor([-1.0, 1.5]))
    opt = O.LBFGS([p], **kw)

    def closure():
        opt.zero_grad()
        loss = (1 - p[0]) ** 2 + 5 * (p[1] - p[0] ** 2) ** 2
        loss.backward()
        return loss

    losses = [float(opt.step(closure)) for _ in range(3)]
    return [float(v) for v in p.detach()] + losses + [opt.state[p]["func_evals"], opt.state[p]["n_iter"]]


show("lbfgs", lbfgs(lr=0.1, max_iter=5))
show("lbfgs history", lbfgs(lr=0.5, max_iter=4, history_size=2))
show("lbfgs wolfe", lbfgs(max_iter=10, line_search_fn="strong_wolfe"))


def lrs(make_sched, n, lr=0.1, opt=None):
    opt = opt or O.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr, momentum=0.9)
    sched = make_sched(opt)
    out = [opt.param_groups[0]["lr"]]
    for _ in range(n):
        opt.step()
        sched.step()
        out.append(opt.param_groups[0]["lr"])
    return out


S = O.lr_scheduler
show("multisteplr", lrs(lambda o: S.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5), 7))
show("exponentiallr", lrs(lambda o: S.ExponentialLR(o, gamma=0.9), 4))
show("linearlr", lrs(lambda o: S.LinearLR(o, start_factor=0.25, total_iters=4), 6))
show("constantlr", lrs(lambda o: S.ConstantLR(o, factor=0.5, total_iters=3), 5))
show("lambdalr", lrs(lambda o: S.LambdaLR(o, lambda e: 1.0 / (e + 1)), 4))
show("multiplicativelr", lrs(lambda o: S.MultiplicativeLR(o, lambda e: 0.9), 4))
show("warmrestarts", lrs(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01), 12))
show("onecycle cos", lrs(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10), 9))
show("onecycle linear three_phase", lrs(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="linear", three_phase=True), 9))


def onecycle_momentum():
    opt = O.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    sched = S.OneCycleLR(opt, max_lr=0.5, total_steps=6)
    out = [opt.param_groups[0]["betas"][0]]
    for _ in range(5):
        opt.step()
        sched.step()
        out.append(opt.param_groups[0]["betas"][0])
    return out


show("onecycle beta1", onecycle_momentum())


def sequential(o):
    warm = S.LinearLR(o, start_factor=0.1, total_iters=3)
    decay = S.CosineAnnealingLR(o, T_max=5)
    return S.SequentialLR(o, schedulers=[warm, decay], milestones=[3])


show("sequentiallr", lrs(sequential, 10))
show("sequential step", lrs(lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.5, total_iters=2), S.StepLR(o, step_size=2, gamma=0.5)], milestones=[2]), 8))


def plateau(**kw):
    opt = O.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = S.ReduceLROnPlateau(opt, **kw)
    out = []
    for m in [5.0, 4.0, 4.0, 4.0, 3.999, 4.0, 4.0, 4.0, 4.0, 4.0, 1.0, 1.0, 1.0, 1.0]:
        sched.step(m)
        out.append(opt.param_groups[0]["lr"])
    return out


show("plateau", plateau(patience=2, factor=0.5))
show("plateau cooldown abs", plateau(patience=1, factor=0.5, cooldown=2, threshold=0.01, threshold_mode="abs", min_lr=0.1))
show("plateau max", plateau(mode="max", patience=1, factor=0.1))
