//! The backward engine's accumulation: a leaf's gradients summed over all its uses
//! (weight gradients of vector-matrix products summed in place into one buffer), then
//! added once into `.grad`; checked against finite differences and hand-derived values,
//! with the aliasing rules (a `.grad` a script holds is never written by a later
//! backward; two leaves never share one gradient buffer).

mod common;

use common::{assert_within, eager_engine, fd_grads, floats, grad_of, text, FD_PRELUDE};

/// An Elman RNN step loop over vector-matrix products: each weight is used at every step.
const RNN: &str = "
manual_seed(3)
Wxh = (randn(5, 7) * 0.4).requires_grad_()
Whh = (randn(7, 7) * 0.4).requires_grad_()
bh = (randn(7) * 0.1).requires_grad_()
Why = (randn(7, 3) * 0.4).requires_grad_()
xs = randn(6, 5)

def loss():
    h = zeros(7)
    for t in range(xs.shape[0]):
        h = tanh(xs[t] @ Wxh + h @ Whh + bh)
    logits = h @ Why
    return logits.logsumexp(0) - logits[1]
";

#[test]
fn rnn_weight_gradients_summed_over_steps_match_finite_differences() {
    let src = format!("{FD_PRELUDE}{RNN}\nloss().backward()\n");
    let mut e = eager_engine(&src);
    for (p, n) in [("Wxh", 35), ("Whh", 49), ("bh", 7), ("Why", 21)] {
        let got = grad_of(&mut e, p);
        assert_within(&got, &fd_grads(&mut e, p, n), 2e-3, p);
    }
}

#[test]
fn two_backward_calls_accumulate_and_leave_a_held_grad_untouched() {
    let src = format!(
        "{RNN}
loss().backward()
g1 = Whh.grad
first = g1.clone()
loss().backward()
"
    );
    let mut e = eager_engine(&src);
    let first = floats(&text(&mut e, "str(first.reshape(-1).tolist())"));
    let held = floats(&text(&mut e, "str(g1.reshape(-1).tolist())"));
    let twice = grad_of(&mut e, "Whh");
    assert_eq!(
        held, first,
        "the .grad a script holds was written by backward"
    );
    let doubled: Vec<f64> = first.iter().map(|x| 2.0 * x).collect();
    assert_within(&twice, &doubled, 1e-6, "Whh.grad after two backward calls");
}

#[test]
fn retain_graph_backward_twice_doubles_the_gradient() {
    let src = format!(
        "{RNN}
l = loss()
l.backward(retain_graph=True)
once = Wxh.grad.clone()
l.backward()
"
    );
    let mut e = eager_engine(&src);
    let once = floats(&text(&mut e, "str(once.reshape(-1).tolist())"));
    let doubled: Vec<f64> = once.iter().map(|x| 2.0 * x).collect();
    assert_within(&grad_of(&mut e, "Wxh"), &doubled, 1e-6, "Wxh.grad");
}

#[test]
fn leaves_fed_one_shared_gradient_get_separate_buffers() {
    // d/da and d/db of sum(a + b) + 3 * sum(a + b): 4 everywhere, from the same
    // gradient tensor handed to both operands of each add.
    let src = "
a = ones(3).requires_grad_()
b = ones(3).requires_grad_()
s = a + b
(s.sum() + (s * 3).sum()).backward()
ga = a.grad
ga += 1
";
    let mut e = eager_engine(src);
    assert_eq!(grad_of(&mut e, "a"), vec![5.0; 3]);
    assert_eq!(grad_of(&mut e, "b"), vec![4.0; 3], "b.grad aliases a.grad");
}

#[test]
fn gradients_through_views_of_a_non_leaf_match_hand_derivation() {
    // y = W^T-free product x @ W (x = [1, 2]); loss = sum(y[1:]^2) + sum(y):
    // dloss/dW[i, j] = x[i] * (1 + 2 * y[j] * [j >= 1]).
    let src = "
W = tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]).requires_grad_()
x = tensor([1.0, 2.0])
y = x @ W
z = y[1:]
((z * z).sum() + y.sum()).backward()
";
    let mut e = eager_engine(src);
    let y = [1.0 + 1.0, 2.0 - 2.0, 3.0 + 4.0];
    let x = [1.0, 2.0];
    let mut want = Vec::new();
    for xi in x {
        for (j, yj) in y.iter().enumerate() {
            let up = if j >= 1 { 1.0 + 2.0 * yj } else { 1.0 };
            want.push(xi * up);
        }
    }
    assert_within(&grad_of(&mut e, "W"), &want, 1e-6, "W.grad");
}

/// A node is made for every recorded op and its op is moved in on every record (W2's
/// per-op overhead is mostly this): these bounds keep the records from growing back
/// unnoticed. A larger rare payload belongs behind a `Box`.
#[test]
fn recorded_ops_stay_small() {
    use std::mem::size_of;
    let sizes = [
        ("IrOp", size_of::<kiln::compile::ir::IrOp>(), 80),
        ("OpSaved", size_of::<kiln::autograd::OpSaved>(), 224),
        ("BackwardOp", size_of::<kiln::autograd::BackwardOp>(), 304),
        ("Node", size_of::<kiln::autograd::Node>(), 424),
    ];
    for (name, size, bound) in sizes {
        assert!(
            size <= bound,
            "{name} is {size} bytes, over its bound of {bound}"
        );
    }
}
