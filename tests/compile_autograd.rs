//! Compiled autograd: gradients of compiled functions' outputs against eager's (1e-5
//! relative) and against central finite differences of the eager loss (f32, so the
//! tolerance is the finite-difference error: eps = 1e-2 gives ~1e-4 truncation and
//! ~1e-5 rounding); capture counts and guards; fallbacks with their reasons.

mod common;

use common::{assert_close, eager_engine, engine, floats, grad_of, stats, text, FD_PRELUDE};
use kiln::Engine;

const MLP: &str = "
import nn
manual_seed(1)
W1 = randn(4, 8) * 0.5
b1 = randn(8) * 0.1
W2 = randn(8, 3) * 0.5
b2 = zeros(3)
for p in [W1, b1, W2, b2]:
    p.requires_grad_()
X = randn(5, 4)
X.requires_grad_()
Y = tensor([0, 2, 1, 1, 0])

def raw(x, y):
    h = tanh(x @ W1 + b1)
    return nn.cross_entropy(h @ W2 + b2, y)

loss_fn = compile(raw)
l = loss_fn(X, Y)
l.backward()
";

fn index_expr(shape: &[usize], k: usize) -> String {
    match shape {
        [_] => k.to_string(),
        [_, c] => format!("({}, {})", k / c, k % c),
        _ => panic!("1-d or 2-d only"),
    }
}

/// Every element's gradient against the central difference of the eager loss.
fn check_fd(e: &mut Engine, name: &str, shape: &[usize], loss: &str) {
    let g = grad_of(e, name);
    assert_eq!(g.len(), shape.iter().product::<usize>(), "{name}");
    for (k, gk) in g.iter().enumerate() {
        let ix = index_expr(shape, k);
        let fd = floats(&text(
            e,
            &format!("str(fd_at({name}, {ix}, 0.01, lambda: {loss}))"),
        ))[0];
        assert!(
            (gk - fd).abs() <= 2e-3 + 1e-2 * fd.abs(),
            "{name}[{ix}]: compiled {gk} vs finite difference {fd}"
        );
    }
}

#[test]
fn mlp_gradients_match_finite_differences_and_eager() {
    let src = format!("{FD_PRELUDE}{MLP}");
    let mut e = engine(&src);
    assert_eq!(stats(&mut e, "loss_fn"), [1, 0, 0, 1]);
    assert_eq!(
        text(&mut e, "explain(loss_fn, X, Y)"),
        "captured: no graph breaks"
    );
    let mut eager = eager_engine(&src);
    for (name, shape) in [
        ("W1", &[4, 8][..]),
        ("b1", &[8]),
        ("W2", &[8, 3]),
        ("b2", &[3]),
        ("X", &[5, 4]),
    ] {
        let (c, g) = (grad_of(&mut e, name), grad_of(&mut eager, name));
        assert_close(&c, &g, name);
        check_fd(&mut e, name, shape, "raw(X, Y)");
    }
}

#[test]
fn grads_accumulate_over_calls_with_one_capture() {
    let src = format!("{MLP}\nfor i in range(2):\n    loss_fn(X, Y).backward()\n");
    let mut e = engine(&src);
    assert_eq!(stats(&mut e, "loss_fn"), [1, 2, 0, 1]);
    // Three backward passes of the same loss: three times one pass's gradient.
    let mut once = engine(MLP);
    let (three, one) = (grad_of(&mut e, "W1"), grad_of(&mut once, "W1"));
    let tripled: Vec<f64> = one.iter().map(|x| 3.0 * x).collect();
    assert_close(&three, &tripled, "W1 after three calls");
}

#[test]
fn broadcasting_reductions_and_indexing_match_finite_differences() {
    let src = format!(
        "{FD_PRELUDE}
manual_seed(4)
A = randn(3, 4)
A.requires_grad_()
B = randn(4)
B.requires_grad_()

def raw(a, b):
    s = (a * b).softmax(1)
    v = a.var(0) + (a - b).logsumexp(1).mean()
    return (s[1:, ::2] * 3.0).sum() + v.sum() + a[tensor([2, 0, 2])].mean(0) @ b + (a[1] * b).sum()

f = compile(raw)
f(A, B).backward()
"
    );
    let mut e = engine(&src);
    assert_eq!(stats(&mut e, "f"), [1, 0, 0, 1]);
    check_fd(&mut e, "A", &[3, 4], "raw(A, B)");
    check_fd(&mut e, "B", &[4], "raw(A, B)");
}

#[test]
fn requires_grad_flips_recapture() {
    let src = "
manual_seed(5)
W = randn(3, 3)
W.requires_grad_()
x = randn(3, 2)  # 2-d: matmul with a 1-d operand has no recordable backward yet

@compile
def f(x):
    return (tanh(W @ x) * x).sum()

f(x).backward()
g1 = W.grad.clone()
x.requires_grad_()
f(x).backward()
W.requires_grad_(False)
f(x).backward()
";
    let mut e = engine(src);
    assert_eq!(stats(&mut e, "f"), [3, 0, 0, 3]);
    // W's gradient came from the first two calls only (the third one did not need it).
    assert_eq!(
        text(&mut e, "str(bool((W.grad - 2.0 * g1).abs().max() < 1e-6))"),
        "True"
    );
    assert_eq!(text(&mut e, "str(x.grad is not None)"), "True");
}

/// conv2d's backward (a dedicated kernel) is a graph op now: captured, no break, and
/// the gradient equals eager's.
#[test]
fn conv_backward_is_captured() {
    let src = "
manual_seed(6)
K = randn(2, 1, 3, 3)
K.requires_grad_()
img = randn(1, 1, 6, 6)

@compile
def f(x):
    return conv2d(x, K).relu().sum()

y = f(img)
y.backward()
";
    let mut e = engine(src);
    let why = text(&mut e, "explain(f, img)");
    assert_eq!(why, "captured: no graph breaks");
    let mut eager = eager_engine(src);
    assert_close(&grad_of(&mut e, "K"), &grad_of(&mut eager, "K"), "K");
}

#[test]
fn unrecordable_backward_falls_back_with_reason() {
    let src = "
manual_seed(6)
K = randn(2, 3)
K.requires_grad_()

@compile
def f(x):
    y = K * 1.0
    y[0] = x
    return (y * y).sum()

z = f(ones(3))
z.backward()
";
    let mut e = engine(src);
    let why = text(&mut e, "explain(f, ones(3))");
    assert!(why.contains("falls back") && why.contains("t.dl:"), "{why}");
    let mut eager = eager_engine(src);
    assert_close(&grad_of(&mut e, "K"), &grad_of(&mut eager, "K"), "K");
}

#[test]
fn no_grad_calls_attach_no_node() {
    let src = "
W = ones(2, 2, requires_grad=True)

@compile
def f(x):
    return (W * x).sum()

with no_grad():
    y = f(ones(2, 2))
z = f(ones(2, 2))
z = f(ones(2, 2))
";
    let mut e = engine(src);
    // Captures under no_grad and with grad, then a hit with grad.
    assert_eq!(stats(&mut e, "f"), [2, 1, 0, 2]);
    assert_eq!(text(&mut e, "str(y.requires_grad)"), "False");
    assert_eq!(text(&mut e, "str(z.requires_grad)"), "True");
    assert_eq!(text(&mut e, "z.grad_fn.name()"), "CompiledFunctionBackward");
}

/// A 1-D operand of matmul (vector @ matrix, matrix @ vector) is unsqueezed by eager
/// and its backward saves that view: the compiled backward records it (it used to fall
/// back with "a tensor op with no IR op"). Bug fix test.
#[test]
fn vector_matmul_backward_is_compiled() {
    let src = format!(
        "{FD_PRELUDE}
manual_seed(9)
W = randn(4, 3)
V = randn(3, 4)
W.requires_grad_()
V.requires_grad_()
x = randn(4)
x.requires_grad_()

def raw(x):
    return (tanh(x @ W) * (V @ x)[:3]).sum()

f = compile(raw)
f(x).backward()
f(x).backward()
"
    );
    let mut e = engine(&src);
    assert_eq!(stats(&mut e, "f"), [1, 1, 0, 1]);
    let why = text(&mut e, "explain(f, x)");
    assert!(!why.contains("no IR op"), "{why}");
    let mut eager = eager_engine(&src);
    for name in ["W", "V", "x"] {
        assert_close(&grad_of(&mut e, name), &grad_of(&mut eager, name), name);
    }
    // Both calls accumulated: halve, then compare with the finite differences.
    text(&mut e, "str([p.grad.mul_(0.5) for p in [W, V, x]])");
    check_fd(&mut e, "W", &[4, 3], "raw(x)");
    check_fd(&mut e, "x", &[4], "raw(x)");
}
