"""PyTorch reference for tests/dl/test_inplace_views.dl: in-place ops on views under
autograd (CopySlices) and views over non-contiguous strides. Each printed line is the
value that test asserts (worked by hand there; this script re-checks them in torch)."""
import torch


def grad_of(f, xs):
    x = torch.tensor(xs, requires_grad=True)
    f(x).backward()
    return x.grad.tolist()


def zero_one(x):
    y = x * 2
    y[1].zero_()
    return y.sum()


def imul_slice(x):
    y = x * 2
    y[0:2] *= 5
    return y.sum()


def set_slice(x):
    y = x * 2
    y[0:2] = y[0:2] * 5
    return y.sum()


print("zero_one", grad_of(zero_one, [1.0, 2.0, 3.0]))  # [2, 0, 2]
print("imul_slice", grad_of(imul_slice, [1.0, 2.0, 3.0]))  # [10, 10, 2]
print("set_slice", grad_of(set_slice, [1.0, 2.0, 3.0]))  # [10, 10, 2]

x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
y = x * 1.0
y.T[0].mul_(4)
y.sum().backward()
print("t_col", x.grad.tolist())  # [[4, 1, 1], [4, 1, 1]]

x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
y = x * 3
y.view(3, 2)[1].mul_(-1)
y.sum().backward()
print("view_row", x.grad.tolist())  # [3, 3, -3, -3, 3, 3]

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
y[1:3].add_(w * w)
(y * y).sum().backward()
print("add_slice", y.tolist(), x.grad.tolist(), w.grad.tolist())  # [2,5,10] [8,20,40] [20,80]

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * 2
v = y[0:2]
y.mul_(3)
v.sum().backward()
print("stale_view", x.grad.tolist())  # [6, 6, 0]

buf = torch.zeros(3)
w = torch.tensor([1.0, 2.0], requires_grad=True)
buf[0:2].copy_(w * 3)
(buf * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
print("copy_into_view", buf.requires_grad, w.grad.tolist())  # True [3, 6]

for name, f in [
    ("leaf_slice", lambda t: t[0:2].mul_(5)),
    ("leaf_view", lambda t: t.view(3).zero_()),
]:
    try:
        f(torch.ones(3, requires_grad=True))
    except RuntimeError as e:
        print(name, str(e).splitlines()[0])

a = torch.arange(6).reshape(2, 3).t()
print("view_strides", a.view(3, 1, 2).stride())  # (1, 6, 3)
try:
    a.view(6)
except RuntimeError as e:
    print("view_err", e)
q = torch.randn(2, 3, 12).split(4, dim=2)[0]
print("split_view", q.view(2, 3, 2, 2).stride())  # (36, 12, 2, 1)
