//! The eager training step's direct paths: a Linear's weight gradient (`x @ W.T`)
//! computed without a transposing copy and only the gradients an edge needs, ReLU's
//! backward as one select pass, and in-place `+= -= *= /=` written straight into the
//! tensor's buffer. Checked against finite differences, hand-derived values and the
//! general rules' results, with the aliasing cases the in-place path must refuse.

mod common;

use common::{assert_within, eager_engine, fd_grads, floats, grad_of, text, FD_PRELUDE};

/// A two-layer MLP (Linear-ReLU-Linear, mean cross-entropy) on an input that needs no
/// gradient: the first product's input gradient is not needed.
const MLP: &str = "
import nn
manual_seed(5)
model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
x = randn(4, 6)
y = tensor([0, 2, 1, 2])

def loss():
    return nn.cross_entropy(model(x), y)
";

fn truth(e: &mut kiln::Engine, expr: &str) -> bool {
    text(e, &format!("str({expr})")) == "True"
}

#[test]
fn mlp_gradients_match_finite_differences() {
    let src = format!("{FD_PRELUDE}{MLP}\nloss().backward()\n");
    let mut e = eager_engine(&src);
    let params = [
        ("model[0].weight", 30),
        ("model[0].bias", 5),
        ("model[2].weight", 15),
        ("model[2].bias", 3),
    ];
    for (p, n) in params {
        let got = grad_of(&mut e, p);
        assert_within(&got, &fd_grads(&mut e, p, n), 2e-3, p);
    }
}

#[test]
fn transposed_weight_gradient_equals_the_general_rule_bit_for_bit() {
    // d sum((x @ W.T) * C) / dW = (x^T @ C)^T, the general rule's product, transposed;
    // the direct path computes C^T @ x: the same multiply-adds in the same order.
    let src = "
manual_seed(9)
W = randn(37, 70).requires_grad_()
x = randn(19, 70)
C = randn(19, 37)
((x @ W.T) * C).sum().backward()
want = (x.T @ C).T
same = bool((W.grad == want).all())
";
    let mut e = eager_engine(src);
    assert!(truth(&mut e, "same"), "W.grad differs from (x^T @ C)^T");
}

#[test]
fn matmul_gradient_of_an_input_alone_matches_hand_derivation() {
    // y = a @ B with B constant: d sum(y * C)/da = C @ B^T; B gets no gradient.
    let src = "
a = tensor([[1.0, 2.0], [3.0, -1.0]]).requires_grad_()
B = tensor([[2.0, 0.5, -1.0], [1.0, 4.0, 3.0]])
C = tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]])
((a @ B.T.T) * C).sum().backward()
";
    let mut e = eager_engine(src);
    // C @ B^T: row 0: [2 - 1 - 0.5, 1 - 8 + 1.5] = [0.5, -5.5]; row 1: [0.5 - 2, 4 + 6].
    assert_eq!(grad_of(&mut e, "a"), vec![0.5, -5.5, -1.5, 10.0]);
    assert_eq!(text(&mut e, "str(B.grad)"), "None");
}

#[test]
fn relu_backward_selects_the_gradient_and_gives_positive_zeros() {
    let src = "
x = tensor([-1.0, 0.0, 2.0, 3.0]).requires_grad_()
(relu(x) * tensor([-3.0, -4.0, 5.0, -6.0])).sum().backward()
inv = (1.0 / x.grad).tolist()
";
    let mut e = eager_engine(src);
    assert_eq!(grad_of(&mut e, "x"), vec![0.0, 0.0, 5.0, -6.0]);
    // +0.0 where x <= 0 (1 / +0 = inf), never -0.0 from the negative gradient.
    let inv = text(&mut e, "str(inv[:2])");
    assert_eq!(inv, "[inf, inf]");
}

#[test]
fn inplace_updates_match_the_out_of_place_ops_exactly() {
    let src = "
manual_seed(2)
p = randn(300, 7)
g = randn(300, 7)
d = randn(300, 7).abs() + 0.5
want = ((((p - 0.01 * g) + g) * 0.999) / d) - g * d
p.sub_(0.01 * g)
p.add_(g)
p.mul_(0.999)
p.div_(d)
p -= g * d
same = bool((p == want).all())
";
    let mut e = eager_engine(src);
    assert!(truth(&mut e, "same"));
}

#[test]
fn inplace_update_of_overlapping_views_reads_the_old_values() {
    // b[1:] += b[:-1] reads every right-hand element before any write: [1, 3, 5, 7]
    // (writing in order would give [1, 3, 6, 10]).
    let src = "
b = tensor([1.0, 2.0, 3.0, 4.0])
b[1:].add_(b[:-1])
c = tensor([1.0, 2.0, 3.0])
c.add_(c)
c.mul_(c)
";
    let mut e = eager_engine(src);
    assert_eq!(
        floats(&text(&mut e, "str(b.tolist())")),
        [1.0, 3.0, 5.0, 7.0]
    );
    assert_eq!(floats(&text(&mut e, "str(c.tolist())")), [4.0, 16.0, 36.0]);
}

#[test]
fn inplace_update_through_a_transposed_view_writes_the_right_elements() {
    let src = "
w = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
w.T.sub_(tensor([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]))
i = tensor([1, 2])
i.add_(3)
";
    let mut e = eager_engine(src);
    assert_eq!(
        floats(&text(&mut e, "str(w.tolist())")),
        [0.0, 0.0, 0.0, -6.0, -15.0, -24.0]
    );
    assert_eq!(text(&mut e, "str(i.tolist())"), "[4, 5]");
    assert_eq!(text(&mut e, "str(i.dtype)"), "torch.int64");
}

#[test]
fn inplace_write_under_no_grad_invalidates_saved_tensors() {
    // x is saved by x * x; the direct in-place write must bump its version.
    let src = "
x = tensor([1.0, 2.0]).requires_grad_()
z = (x * x).sum()
with no_grad():
    x.add_(tensor([1.0, 1.0]))
msg = ''
try:
    z.backward()
except RuntimeError as err:
    msg = str(err)
";
    let mut e = eager_engine(src);
    let msg = text(&mut e, "msg");
    assert!(msg.contains("modified by an inplace operation"), "{msg}");
    assert_eq!(floats(&text(&mut e, "str(x.tolist())")), [2.0, 3.0]);
}

#[test]
fn sgd_on_a_parameter_shared_by_two_layers_sums_both_uses() {
    // y = W @ (W @ v) with W = [[2]], v = [3]: y = 12 w^2... here W 1x1 = w:
    // y = w * w * 3, dy/dw = 6 w = 12; one SGD step of lr 0.5: 2 - 6 = -4.
    let src = "
import nn
import optim
lin = nn.Linear(1, 1, bias=False)
with no_grad():
    lin.weight.fill_(2.0)
model = nn.Sequential(lin, lin)
opt = optim.SGD(model.parameters(), lr=0.5)
opt.zero_grad()
model(tensor([[3.0]])).sum().backward()
g = lin.weight.grad.item()
opt.step()
";
    let mut e = eager_engine(src);
    assert_eq!(floats(&text(&mut e, "str(g)")), [12.0]);
    assert_eq!(floats(&text(&mut e, "str(lin.weight.item())")), [-4.0]);
}

/// optim.Adam's op chain written out (the update the fused pass must reproduce).
const ADAM_BY_OPS: &str = "
def adam_by_ops(params, grads, state, t, lr, b1, b2, eps):
    with no_grad():
        t.add_(1)
        bc1 = optim._bias_correction(b1, t)
        bc2_sqrt = optim._bias_correction(b2, t).sqrt()
        step_size = lr / bc1
        for i, p in enumerate(params):
            g = grads[i]
            m = state[i][0]
            v = state[i][1]
            m.add_((g - m) * (1 - b1))
            v.mul_(b2)
            v.add_(g * (1 - b2) * g)
            denom = v.sqrt() / bc2_sqrt + eps
            p.sub_(m / denom * step_size)
";

#[test]
fn fused_adam_steps_equal_the_op_chain_bit_for_bit() {
    let src = format!(
        "import optim
{ADAM_BY_OPS}
manual_seed(4)
ps = [randn(33, 17), randn(17)]
qs = [p.clone() for p in ps]
init = ps[0].clone()
for p in ps:
    p.requires_grad_()
opt = optim.Adam(ps, lr=1e-2)
state = [[zeros_like(q), zeros_like(q)] for q in qs]
t = zeros(())
for s in range(5):
    gs = [randn(*q.shape) * (s + 1) for q in qs]
    opt.zero_grad()
    for p, g in zip(ps, gs):
        p.grad = g
    opt.step()
    adam_by_ops(qs, gs, state, t, 1e-2, 0.9, 0.999, 1e-8)
same = all([bool((p == q).all()) for p, q in zip(ps, qs)])
moved = not bool((ps[0] == init).all())
"
    );
    let mut e = eager_engine(&src);
    assert!(
        truth(&mut e, "same"),
        "fused Adam differs from the op chain"
    );
    assert!(truth(&mut e, "moved"));
}

#[test]
fn fused_sgd_step_equals_the_op_chain_bit_for_bit() {
    let src = "
import optim
manual_seed(6)
p = randn(40, 9).requires_grad_()
q = p.detach().clone()
g = randn(40, 9)
opt = optim.SGD([p], lr=0.037)
p.grad = g
opt.step()
q.sub_(0.037 * g)
same = bool((p == q).all())
";
    let mut e = eager_engine(src);
    assert!(truth(&mut e, "same"));
}

#[test]
fn fused_updates_decline_aliased_or_strided_tensors() {
    // Declined (False, nothing written): the caller then runs the op chain.
    let src = "
p = tensor([[1.0, 2.0], [3.0, 4.0]])
same_storage = _sgd_update_(p, p, 0.5)
strided = _sgd_update_(p.T, ones(2, 2), 0.5)
half = ones(2, 2)
k = zeros(())
fresh_state = _adam_update_(p, half, half * 0, half * 0 + 0, 0.1, 0.9, 0.1, k + 1, 1e-8, k + 1)
m = zeros(2, 2)
aliased_moments = _adam_update_(p, half, m, m, 0.1, 0.9, 0.1, k + 1, 1e-8, k + 1)
ok = _sgd_update_(p, half, 0.5)
";
    let mut e = eager_engine(src);
    assert_eq!(text(&mut e, "str(same_storage)"), "False");
    assert_eq!(text(&mut e, "str(strided)"), "False");
    assert_eq!(text(&mut e, "str(aliased_moments)"), "False");
    assert_eq!(text(&mut e, "str(ok)"), "True");
    // p: 1 - 0.5 * 1 after the one accepted SGD update, and the Adam one before it
    // (lr-free: m = 0.1, v = 0.1, p -= 0.1 / (sqrt(0.1) + 1e-8)).
    let step = 0.1f64 / (0.1f32.sqrt() as f64);
    let want: Vec<f64> = [1.0, 2.0, 3.0, 4.0]
        .iter()
        .map(|x| x - step - 0.5)
        .collect();
    let got = floats(&text(&mut e, "str(p.reshape(-1).tolist())"));
    assert_within(&got, &want, 1e-6, "p");
    assert_eq!(text(&mut e, "str(fresh_state)"), "True");
}
