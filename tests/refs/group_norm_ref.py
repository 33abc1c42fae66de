"""PyTorch figures for tests/dl/test_group_norm_fused.dl: group_norm's output, input,
weight and bias gradients and second-order input gradient on deterministic inputs.
Run: python tests/refs/group_norm_ref.py (prints one line per case)."""
import torch
torch.set_printoptions(precision=10)
def inputs(shape, dt=torch.float32):
    n = 1
    for s in shape: n *= s
    x = (torch.arange(n, dtype=torch.float64) * 0.37).sin().reshape(shape) * 2.0 + 0.25
    gy = (torch.arange(n, dtype=torch.float64) * 0.11 + 0.5).cos().reshape(shape)
    return x.to(dt), gy.to(dt)
for shape, G, dt in [((3, 6, 5, 4), 3, torch.float32), ((4, 8), 4, torch.float32), ((2, 4, 7), 2, torch.float64), ((2, 6, 9, 9), 1, torch.float32)]:
    x, gy = inputs(shape, dt)
    C = shape[1]
    w = (torch.arange(C, dtype=torch.float64) * 0.3 - 0.4).to(dt).requires_grad_()
    b = (torch.arange(C, dtype=torch.float64) * -0.2 + 0.1).to(dt).requires_grad_()
    x.requires_grad_()
    y = torch.nn.functional.group_norm(x, G, w, b, 1e-5)
    dx, dw, db = torch.autograd.grad((y * gy).sum(), (x, w, b), create_graph=True)
    (ddx,) = torch.autograd.grad((dx * dx).sum(), (x,))
    def f(t):
        return repr(round(float(t.detach()), 6))
    print(shape, G, dt, f((y*y).sum()), f(y.flatten()[5]), f((dx*dx).sum()), f(dx.flatten()[7]), [round(v, 6) for v in dw.tolist()], [round(v, 6) for v in db.tolist()], f((ddx*ddx).sum()), f(ddx.flatten()[3]))
