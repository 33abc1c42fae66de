//! Compiled autograd through captured `for` loops: the loop's backward is a reverse loop
//! in the compiled backward (one capture over many lengths once the length is
//! symbolic). Gradients are compared with eager's (1e-5 relative) and with central
//! finite differences of the eager loss (eps 1e-2 in f32: ~1e-4 truncation error).

mod common;

use common::{
    assert_close, eager_engine, engine, floats, grad_of, stats, text, with_last_graph, FD_PRELUDE,
};
use kiln::Engine;

/// Every element's gradient (of a 2-d `name` with `cols` columns, or 1-d when 0)
/// against the central difference of the eager loss expression `loss`.
fn check_fd(e: &mut Engine, name: &str, cols: usize, loss: &str) {
    let g = grad_of(e, name);
    assert!(!g.is_empty(), "{name}");
    for (k, gk) in g.iter().enumerate() {
        let ix = match cols {
            0 => k.to_string(),
            c => format!("({}, {})", k / c, k % c),
        };
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

/// Compiled (`e`) and eager (`eager`) gradients of the globals `names` agree.
fn same_grads(e: &mut Engine, eager: &mut Engine, names: &[&str]) {
    for name in names {
        assert_close(&grad_of(e, name), &grad_of(eager, name), name);
    }
}

const RNN: &str = "
manual_seed(3)
D = 3
H = 4
Wxh = randn(D, H) * 0.5
Whh = randn(H, H) * 0.5
bh = randn(H) * 0.1
Why = randn(H, 3) * 0.5
for p in [Wxh, Whh, bh, Why]:
    p.requires_grad_()
xs = [randn(n, D) for n in [9, 10, 11, 13, 17, 10]]
ys = [tensor(k % 3) for k in range(len(xs))]

def raw(x, y):
    h = zeros(H)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ Wxh + h @ Whh + bh)
    logits = h @ Why
    return logits.logsumexp(0) - logits[y]

def total():
    s = raw(xs[0], ys[0])
    for i in range(1, len(xs)):
        s = s + raw(xs[i], ys[i])
    return s

loss_fn = compile(raw)
for i in range(len(xs)):
    loss_fn(xs[i], ys[i]).backward()
";

#[test]
fn rnn_over_symbolic_lengths_compiles_twice_and_matches() {
    let mut e = engine(&format!("{FD_PRELUDE}{RNN}"));
    // A static first version, then one symbolic in the length for every other call
    // (before compiled loop backwards: a fallback or a capture per length).
    assert_eq!(stats(&mut e, "loss_fn"), [2, 4, 0, 2]);
    same_grads(&mut e, &mut eager_rnn(), &["Wxh", "Whh", "bh", "Why"]);
    check_fd(&mut e, "Whh", 4, "total()");
    check_fd(&mut e, "bh", 0, "total()");
}

/// The dumps of the forward and the compiled backward of the last version of the
/// compiled global `name`.
fn version_texts(e: &Engine, name: &str) -> (String, String) {
    with_last_graph(e, name, |g| {
        let Some(ad) = &g.autodiff else {
            panic!("{name} has no compiled backward");
        };
        (g.compiled.to_text(None), ad.backward.to_text(None))
    })
}

#[test]
fn reverse_loop_reads_saved_values_and_sums_weight_gradients_after_it() {
    let e = engine(&format!("{FD_PRELUDE}{RNN}"));
    let (fwd, bwd) = version_texts(&e, "loss_fn");
    // The forward loop stacks the carried `h` and the tanh output the backward reads.
    assert!(fwd.contains("carried=1, index=0+1k, scan=2"), "{fwd}");
    // The reverse loop carries only dh (no accumulators) and stacks one row per
    // iteration: dpre, the row of the outer products for Wxh (x[t], dpre) and Whh (h,
    // dpre) and of bh's sum, summed after it (two matrix products and a sum) with `x`
    // itself and the forward loop's stack of `h` (not stacked again); it does not
    // recompute the iteration: its only product is dpre @ Whh^T.
    assert!(
        bwd.contains("carried=1, index=0+1k, scan=1, reverse"),
        "{bwd}"
    );
    let body = bwd
        .lines()
        .skip_while(|l| !l.contains(", reverse)"))
        .skip(1)
        .take_while(|l| l.starts_with("  "));
    assert_eq!(body.filter(|l| l.contains("= matmul(")).count(), 1, "{bwd}");
}

/// Runs `body` (which defines `raw` over globals, `loss_fn = compile(raw)` and calls
/// it with backward) compiled and eagerly; checks the compiled versions ran without
/// fallback and that the gradients of `names` agree with eager's.
fn differential(body: &str, names: &[&str]) -> Engine {
    let src = format!("{FD_PRELUDE}{body}");
    let mut e = engine(&src);
    let [captures, _, fallbacks, _] = stats(&mut e, "loss_fn");
    assert!(captures >= 1, "captured");
    assert_eq!(
        fallbacks,
        0,
        "{}",
        text(&mut e, "str(compile_stats(loss_fn))")
    );
    let mut eager = eager_engine(&src.replace("loss_fn = compile(raw)", "loss_fn = raw"));
    same_grads(&mut e, &mut eager, names);
    e
}

#[test]
fn invariant_used_twice_in_the_body() {
    let body = "
manual_seed(4)
W = randn(3, 3) * 0.4
W.requires_grad_()
x = randn(12, 3)

def raw(x):
    h = zeros(3)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ W + h @ W) * W[0]
    return (h * h).sum()

loss_fn = compile(raw)
loss_fn(x).backward()
";
    let mut e = differential(body, &["W"]);
    check_fd(&mut e, "W", 3, "raw(x)");
}

#[test]
fn two_carried_values_used_after_the_loop() {
    let body = "
manual_seed(5)
W = randn(2, 4) * 0.5
U = randn(4, 4) * 0.3
for p in [W, U]:
    p.requires_grad_()
x = randn(11, 2)

def raw(x):
    h = zeros(4)
    acc = zeros(4)
    for t in range(x.shape[0]):
        h = sigmoid(x[t] @ W + h @ U)
        acc = acc + h * h
    return acc.sum() + (h * acc).sum()

loss_fn = compile(raw)
loss_fn(x).backward()
";
    let mut e = differential(body, &["W", "U"]);
    check_fd(&mut e, "W", 4, "raw(x)");
    check_fd(&mut e, "U", 4, "raw(x)");
}

#[test]
fn an_unused_parameter_gets_no_gradient_as_in_eager() {
    let body = "
manual_seed(6)
W = randn(2, 3) * 0.5
V = randn(3)
for p in [W, V]:
    p.requires_grad_()
x = randn(10, 2)

def raw(x, V):
    h = zeros(3)
    n = zeros(3)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ W + h)
        n = n + 1.0
    return (h * n).sum()

loss_fn = compile(raw)
loss_fn(x, V).backward()
";
    let mut e = differential(body, &["W"]);
    assert_eq!(text(&mut e, "str(V.grad is None)"), "True");
    // `n` never depends on a parameter: it does not require grad, as in eager.
    assert_eq!(
        text(
            &mut e,
            "str([loss_fn(x, V).requires_grad, W.grad is not None])"
        ),
        "[True, True]"
    );
    check_fd(&mut e, "W", 3, "raw(x, V)");
}

#[test]
fn an_input_indexed_twice_gets_its_rows_gradients() {
    let body = "
manual_seed(7)
W = randn(3, 3) * 0.5
W.requires_grad_()
x = randn(10, 3)
x.requires_grad_()

def raw(x):
    h = zeros(3)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ W + h * x[t].sum())
    return h.sum()

loss_fn = compile(raw)
loss_fn(x).backward()
";
    let mut e = differential(body, &["W", "x"]);
    check_fd(&mut e, "x", 3, "raw(x)");
}

#[test]
fn a_tensor_while_loop_needing_grad_still_falls_back_with_reason() {
    let src = "
W = tensor([0.5, 0.25])
W.requires_grad_()

@compile
def f(x):
    while x.sum() < 10.0:
        x = x * 2.0 + W
    return x.sum()

f(tensor([1.0, 1.0])).backward()
";
    let mut e = engine(src);
    let why = text(&mut e, "explain(f, tensor([1.0, 1.0]))");
    assert!(why.contains("loop on values that require grad"), "{why}");
}

#[test]
fn reverse_body_has_no_chains_of_row_reshapes_and_permutes() {
    let e = engine(&format!("{FD_PRELUDE}{RNN}"));
    let (_, bwd) = version_texts(&e, "loss_fn");
    let body: Vec<&str> = bwd
        .lines()
        .skip_while(|l| !l.contains(", reverse)"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    let count = |op: &str| body.iter().filter(|l| l.contains(op)).count();
    // The row's vector is multiplied as it is (no `[1, k]` reshape around the product)
    // by the transposed weight made once before the loop (`licm`).
    assert_eq!((count("= reshape("), count("= permute(")), (0, 0), "{bwd}");
}

/// Lines of a graph dump at the top level (`outer`) or inside a loop body (`body`)
/// that contain `what`.
fn count_lines(dump: &str, body: bool, what: &str) -> usize {
    dump.lines()
        .filter(|l| l.starts_with("    %") == body && l.starts_with('%') != body)
        .filter(|l| l.contains(what))
        .count()
}

/// An engine that ran the RNN compiled with `dynamic=True`: six calls over five
/// lengths, checked to be one capture, symbolic in the length from the start.
fn dynamic_rnn() -> Engine {
    let src = RNN.replace(
        "loss_fn = compile(raw)",
        "loss_fn = compile(raw, dynamic=True)",
    );
    let mut e = engine(&format!("{FD_PRELUDE}{src}"));
    assert_eq!(stats(&mut e, "loss_fn"), [1, 5, 0, 1]);
    e
}

/// An engine that ran the same RNN program eagerly.
fn eager_rnn() -> Engine {
    eager_engine(&format!(
        "{FD_PRELUDE}{}",
        RNN.replace("loss_fn = compile(raw)", "loss_fn = raw")
    ))
}

#[test]
fn one_symbolic_capture_hoists_the_input_projection_and_matches_eager() {
    let mut e = dynamic_rnn();
    let (fwd, _) = version_texts(&e, "loss_fn");
    // `x[t] @ Wxh` is row t of one product `x @ Wxh` before the loop (next to the
    // head's `h @ Why`); the body's only product is `h @ Whh`.
    assert_eq!(count_lines(&fwd, true, "= matmul("), 1, "{fwd}");
    assert_eq!(count_lines(&fwd, false, "= matmul(%0, "), 1, "{fwd}");
    same_grads(&mut e, &mut eager_rnn(), &["Wxh", "Whh", "bh", "Why"]);
    check_fd(&mut e, "Wxh", 4, "total()");
}

/// The lines of the first reverse loop's body in a backward dump.
fn reverse_body(bwd: &str) -> Vec<&str> {
    bwd.lines()
        .skip_while(|l| !l.contains(", reverse)"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect()
}

#[test]
fn reverse_loop_multiplies_by_one_transposed_copy_made_before_it() {
    let mut e = dynamic_rnn();
    let (_, bwd) = version_texts(&e, "loss_fn");
    // `dpre @ Whh^T`: the transpose is loop-invariant, made contiguous once before the
    // reverse loop; the body multiplies by that copy (a loop arg) and permutes nothing.
    let rev = reverse_body(&bwd);
    assert_eq!(
        rev.iter().filter(|l| l.contains("= permute(")).count(),
        0,
        "{bwd}"
    );
    assert_eq!(
        rev.iter().filter(|l| l.contains("= matmul(")).count(),
        1,
        "{bwd}"
    );
    assert_eq!(count_lines(&bwd, false, "= contiguous("), 1, "{bwd}");
    same_grads(&mut e, &mut eager_rnn(), &["Wxh", "Whh", "bh", "Why"]);
    check_fd(&mut e, "Whh", 4, "total()");
}

#[test]
fn only_invariant_transposes_move_out_of_a_loop() {
    let src = "
manual_seed(9)
W = randn(4, 4) * 0.4
x = randn(10, 4)

def raw(x, W):
    h = zeros(4)
    V = W * 1.0
    for t in range(x.shape[0]):
        h = tanh(x[t] @ W + h @ V.permute(1, 0) + h @ W.permute(1, 0))
        V = V * 0.9
    return h

c = compile(raw)
with no_grad():
    ok = bool((c(x, W) - raw(x, W)).abs().max() <= 1e-6)
    dump = graph(c, x, W)
";
    let mut e = engine(src);
    assert!(
        e.eval_as::<bool>("ok").unwrap_or(false),
        "compiled != eager"
    );
    let dump = text(&mut e, "dump");
    // W's transpose is the same at every iteration: made contiguous once before the
    // loop. V is carried (rewritten every iteration): its transpose stays in the body.
    assert!(dump.contains("= loop("), "{dump}");
    assert_eq!(count_lines(&dump, true, "= permute("), 1, "{dump}");
    assert_eq!(count_lines(&dump, false, "= permute("), 1, "{dump}");
    assert_eq!(count_lines(&dump, false, "= contiguous("), 1, "{dump}");
}

/// The RNN with every weight an argument (as benches/w7_rnn.dl passes them), compiled
/// with `dynamic=True`: every argument dim starts symbolic.
const RNN_ARGS: &str = "
manual_seed(5)
D = 3
H = 4
C = 3
params = [randn(D, H) * 0.5, randn(H, H) * 0.5, randn(H) * 0.1, randn(H, C) * 0.5,
          randn(C) * 0.1]
for p in params:
    p.requires_grad_()
Wxh, Whh, bh, Why, by = params
xs = [randn(n, D) for n in [9, 10, 11, 13, 17, 10]]
ys = [tensor(k % C) for k in range(len(xs))]

def raw(x, y, Wxh, Whh, bh, Why, by):
    h = zeros(H)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ Wxh + h @ Whh + bh)
    logits = h @ Why + by
    return logits.logsumexp(0) - logits[y]

def total():
    s = raw(xs[0], ys[0], *params)
    for i in range(1, len(xs)):
        s = s + raw(xs[i], ys[i], *params)
    return s

loss_fn = compile(raw, dynamic=True)
for i in range(len(xs)):
    loss_fn(xs[i], ys[i], *params).backward()
";

#[test]
fn dynamic_true_with_weight_arguments_is_one_capture_over_all_lengths() {
    // The backward fixes the sizes the graph names (the hidden size of `zeros(H)`, the
    // class count of `logits[y]`'s gradient): those are specialised, the length stays
    // symbolic, and so does the input width, which the loop body follows (`x[t] @ Wxh`
    // ties it to Wxh's rows). (Before: the whole version was specialised, one capture
    // per length; then the body kept its capture-time shapes, fixing the width.)
    let mut e = engine(&format!("{FD_PRELUDE}{RNN_ARGS}"));
    assert_eq!(stats(&mut e, "loss_fn"), [1, 5, 0, 1]);
    let (fwd, _) = version_texts(&e, "loss_fn");
    assert!(fwd.contains("%0 = input(arg0) : f32[s0, s1]"), "{fwd}");
    assert!(fwd.contains("%2 = input(arg2) : f32[s1, 4]"), "{fwd}");
    assert!(fwd.contains("%3 = input(arg3) : f32[4, 4]"), "{fwd}");
    let mut eager = eager_engine(&format!(
        "{FD_PRELUDE}{}",
        RNN_ARGS.replace("loss_fn = compile(raw, dynamic=True)", "loss_fn = raw")
    ));
    same_grads(&mut e, &mut eager, &["Wxh", "Whh", "bh", "Why", "by"]);
    check_fd(&mut e, "Whh", 4, "total()");
    check_fd(&mut e, "by", 0, "total()");
}

#[test]
fn dims_the_backward_specialised_are_guarded() {
    // Guard case: a call with another class count (the function reads no global of
    // it) must not run the version whose class count the backward specialised; it
    // captures again and matches eager. (Its input width 5 alone would reuse the
    // version: the loop body follows the width.)
    let src = format!(
        "{FD_PRELUDE}{RNN_ARGS}
x2 = randn(9, 5)
p2 = [randn(5, H), randn(H, H), randn(H), randn(H, 5), randn(5)]
for p in p2:
    p.requires_grad_()
out = loss_fn(x2, ys[0], *p2)
out.backward()
want = raw(x2, ys[0], *[p.detach().requires_grad_() for p in p2])
"
    );
    let mut e = engine(&src);
    assert_eq!(stats(&mut e, "loss_fn"), [2, 5, 0, 2]);
    let got = floats(&text(&mut e, "str(out.item())"));
    let want = floats(&text(&mut e, "str(want.item())"));
    assert_close(&got, &want, "loss at another class count and width");
}
