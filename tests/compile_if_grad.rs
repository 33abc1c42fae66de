//! Compiled autograd through a captured tensor `if` (compile/autodiff/if_grad.rs): one
//! capture serves both sides, its backward a branch on the forward's condition.
//! Gradients are compared with eager's (1e-5 relative) and with central finite
//! differences of the eager loss (eps 1e-2 in f32: ~1e-4 truncation error). An input
//! only one side differentiates falls back: eager leaves its gradient None when the
//! other side runs, which one compiled backward could not reproduce; so does an input
//! whose gradient reads different results' gradients on each side.

mod common;

use common::{
    assert_close, eager_engine, engine, fd_grads, grad_of, stats, text, with_last_graph, FD_PRELUDE,
};

const BRANCHY: &str = "
manual_seed(6)
W = randn(3, 3) * 0.5
b = randn(3) * 0.3
for p in [W, b]:
    p.requires_grad_()
xs = []
for k in range(4):
    x = randn(4, 3)
    if (x.sum().item() > 0) != (k % 2 == 0):
        x = -x
    xs.append(x)

def raw(x):
    h = x @ W
    if x.sum() > 0.0:
        h = tanh(h) * b + h
    else:
        h = h * b - sigmoid(h)
    return (h * h).sum()

def loss():
    s = raw(xs[0])
    for x in xs[1:]:
        s = s + raw(x)
    return s

loss_fn = compile(raw)
for x in xs:
    loss_fn(x).backward()
";

#[test]
fn both_sides_under_one_capture_match_finite_differences_and_eager() {
    let src = format!("{FD_PRELUDE}{BRANCHY}");
    let mut e = engine(&src);
    // One capture (the first call, then side), three replays taking both sides.
    assert_eq!(stats(&mut e, "loss_fn"), [1, 3, 0, 1]);
    let mut eager = eager_engine(&src.replace("loss_fn = compile(raw)", "loss_fn = raw"));
    for name in ["W", "b"] {
        let g = grad_of(&mut e, name);
        assert_close(&g, &grad_of(&mut eager, name), name);
        let fd = fd_grads(&mut e, name, g.len());
        for (k, (got, want)) in g.iter().zip(&fd).enumerate() {
            assert!(
                (got - want).abs() <= 2e-3 + 1e-2 * want.abs(),
                "{name}[{k}]: compiled {got} vs finite difference {want}"
            );
        }
    }
    let bwd = with_last_graph(&e, "loss_fn", |g| {
        g.autodiff
            .as_ref()
            .map(|a| a.backward.to_text(None))
            .unwrap_or_default()
    });
    assert!(bwd.contains(" = if("), "the backward branches: {bwd}");
}

#[test]
fn an_input_only_one_side_differentiates_falls_back_with_reason() {
    let src = "
W = tensor([0.5, 0.25])
V = tensor([1.0, 2.0])
W.requires_grad_()
V.requires_grad_()

@compile
def f(x):
    if x.sum() > 0.0:
        y = x * W + V
    else:
        y = x * 2.0 + V
    return y.sum()

f(tensor([1.0, 1.0])).backward()
W.grad = None
f(tensor([-1.0, -1.0])).backward()
untouched = W.grad is None
";
    let mut e = engine(src);
    let why = text(&mut e, "explain(f, tensor([1.0, 1.0]))");
    assert!(
        why.contains("sides differentiate different inputs"),
        "{why}"
    );
    // As eager: the else side does not read W, so W gets no gradient (not zeros).
    assert_eq!(text(&mut e, "str(untouched)"), "True");
}

#[test]
fn sides_reading_different_results_gradients_fall_back_with_reason() {
    // Nothing reads `r` after the branch: the then side's gradient for q reads only r's
    // (None, so Z gets none), the else side's reads a's too. One compiled backward
    // could not give both, so the version runs eagerly; the capture call's own
    // backward (the branch's node, run eagerly) already leaves Z.grad None.
    let src = "
U = tensor([0.5, -0.25])
Z = tensor([1.0, 2.0])
U.requires_grad_()
Z.requires_grad_()

@compile
def f(x):
    p = x * U
    q = x * Z
    if p.sum() > 0.0:
        a = p * 2.0
        r = q * 3.0
    else:
        a = p + q
        r = q - 1.0
    return (a * a).sum()

f(tensor([1.0, 1.0])).backward()
then_none = Z.grad is None
f(tensor([-1.0, -1.0])).backward()
";
    let mut e = engine(src);
    let why = text(&mut e, "explain(f, tensor([1.0, 1.0]))");
    assert!(why.contains("need different results' gradients"), "{why}");
    assert_eq!(text(&mut e, "str(then_none)"), "True");
    // Else side: d/dZ sum((x*U + x*Z)^2) = 2 (x*U + x*Z) x, at x = -1: [3.0, 3.5].
    assert_eq!(grad_of(&mut e, "Z"), [3.0, 3.5]);
}
