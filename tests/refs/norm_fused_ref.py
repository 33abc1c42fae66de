"""Reference numbers for tests/dl/test_norm_fused.dl (the fused batch_norm / layer_norm
primitives), computed with real PyTorch.

Run: /work/peers-venv/bin/python tests/refs/norm_fused_ref.py   (torch 2.15, CPU)
Torch is never needed to build or test Kiln; the Kiln test quotes the labelled lines.

Inputs are exact in float32 so Kiln builds the same values:
pat(shape, a, b) = ((arange(numel) * a) % b) * 0.25 - 1, as float32.
Gradients are of sum(y * wts(y)), wts = (arange(numel) % 5 - 2) as float32.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


def pat(shape, a, b):
    n = 1
    for s in shape:
        n *= s
    return ((torch.arange(n) * a) % b).float().reshape(shape) * 0.25 - 1


def wts(t):
    return (torch.arange(t.numel()) % 5 - 2).float().reshape(t.shape)


def vals(t):
    return "[" + ", ".join(f"{float(v):.7g}" for v in t.detach().flatten()) + "]"


def bn_case(label, shape, affine):
    c = shape[1]
    x = pat(shape, 7, 11).requires_grad_()
    bn = nn.BatchNorm1d(c, affine=affine) if len(shape) < 4 else nn.BatchNorm2d(c, affine=affine)
    if affine:
        with torch.no_grad():
            bn.weight.copy_(pat((c,), 3, 5) + 1.5)
            bn.bias.copy_(pat((c,), 2, 7))
    for step in range(3):
        xs = x * (1 + 0.5 * step)
        y = bn(xs)
        if step == 0:
            (y * wts(y)).sum().backward()
            print(f"{label} y_w {float((y * wts(y)).sum().detach()):.7g}")
            print(f"{label} gx {vals(x.grad)}")
            if affine:
                print(f"{label} gw {vals(bn.weight.grad)}")
                print(f"{label} gb {vals(bn.bias.grad)}")
    print(f"{label} running_mean {vals(bn.running_mean)}")
    print(f"{label} running_var {vals(bn.running_var)}")
    bn.eval()
    x.grad = None
    y = bn(x)
    (y * wts(y)).sum().backward()
    print(f"{label} eval_y {vals(y)}")
    print(f"{label} eval_gx {vals(x.grad)}")


def ln_case(label, shape, k, affine, bias=True):
    x = pat(shape, 5, 13).requires_grad_()
    ln = nn.LayerNorm(shape[-k:], elementwise_affine=affine, bias=bias)
    if affine:
        with torch.no_grad():
            ln.weight.copy_(pat(shape[-k:], 3, 7) + 1.25)
            if bias:
                ln.bias.copy_(pat(shape[-k:], 2, 5))
    y = ln(x)
    (y * wts(y)).sum().backward()
    print(f"{label} y {vals(y)}")
    print(f"{label} gx {vals(x.grad)}")
    if affine:
        print(f"{label} gw {vals(ln.weight.grad)}")
        if bias:
            print(f"{label} gb {vals(ln.bias.grad)}")
    print(f"{label} grad_fn {type(y.grad_fn).__name__}")


bn_case("bn2d", (3, 2), True)
bn_case("bn3d", (2, 3, 5), True)
bn_case("bn4d", (2, 3, 3, 2), False)
ln_case("ln1", (3, 5), 1, True)
ln_case("ln2", (2, 3, 4), 2, True, bias=False)
ln_case("ln0", (4, 3), 1, False)
x = pat((2, 3, 4), 7, 11).requires_grad_()
y = F.batch_norm(x, None, None, training=True)
print(f"bn_grad_fn {type(y.grad_fn).__name__}")
