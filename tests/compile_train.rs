//! Whole training steps under `@compile` (tests/compile/train_step.dl, whose outputs
//! tests/compile_diff.rs compares with eager): every step function compiles exactly
//! once for its 20 steps, replays 19 times and never falls back (no eager version, no
//! graph break), i.e. the optimizer's Python state does not change between steps.

use kiln::compile::capture::cache::EntryKind;
use kiln::{Engine, Value};
use std::path::Path;

#[test]
fn each_training_step_compiles_once_without_fallback() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compile/train_step.dl");
    let mut e = Engine::new();
    e.set_compile(true);
    e.set_output(Box::new(|_| {}));
    let res = e.run_file(&path);
    assert!(res.is_ok(), "train_step.dl failed");
    let mut seen = 0;
    for (name, v) in e.globals() {
        let Value::Compiled(cf) = &v else { continue };
        seen += 1;
        let c = cf.cache.borrow();
        assert_eq!(c.stats.captures, 1, "{name}: {:?}", c.stats);
        assert_eq!(c.stats.hits, 19, "{name}: {:?}", c.stats);
        assert_eq!(c.stats.fallbacks, 0, "{name}: {:?}", c.stats);
        assert_eq!(c.entries.len(), 1, "{name}");
        assert!(
            c.entries
                .iter()
                .all(|x| matches!(x.kind, EntryKind::Graph(_))),
            "{name} has an eager version"
        );
    }
    assert_eq!(seen, 5, "five compiled step functions");
}

/// The fused-kernel outputs a compiled function has allocated so far.
fn fresh(e: &Engine, name: &str) -> usize {
    let v = e.get_global(name);
    let Some(Value::Compiled(cf)) = &v else {
        panic!("{name} is not a compiled function");
    };
    let c = cf.cache.borrow();
    match c.entries.first().map(|x| &x.kind) {
        Some(EntryKind::Graph(g)) => g.compiled.fresh_outputs(),
        _ => panic!("{name} has no compiled graph"),
    }
}

/// Trains one model compiled and one eagerly with the optimizer `opt` (an expression
/// of the parameter list `ps`) for 15 steps and
/// checks: losses and parameters within 1e-5 relative step by step, no kernel output
/// allocated after warm-up, and the graph text (returned).
fn train_against_eager(opt: &str) -> String {
    train_sized_against_eager(opt, (24, 12, 40))
}

/// [`train_against_eager`] for an MLP `inputs`-`hidden`-`hidden`-4 on `batch` rows.
fn train_sized_against_eager(opt: &str, (batch, inputs, hidden): (usize, usize, usize)) -> String {
    let src = format!(
        "
import nn
import optim
manual_seed(7)
X = randn({batch}, {inputs})
Y = tensor([k % 4 for k in range({batch})])
def make():
    manual_seed(11)
    return nn.Sequential(nn.Linear({inputs}, {hidden}), nn.ReLU(), nn.Linear({hidden}, {hidden}),
                         nn.ReLU(), nn.Linear({hidden}, 4))
def make_opt(ps):
    return {opt}
m1 = make()
o1 = make_opt(m1.parameters())
m2 = make()
o2 = make_opt(m2.parameters())
def eager_step(x, y):
    o2.zero_grad()
    loss = nn.cross_entropy(m2(x), y)
    loss.backward()
    o2.step()
    return loss
@compile
def step(x, y):
    o1.zero_grad()
    loss = nn.cross_entropy(m1(x), y)
    loss.backward()
    o1.step()
    return loss
def rel(a, b):
    return ((a - b).abs().max() / (b.abs().max() + 1e-30)).item()
def run(n):
    worst = 0.0
    for _ in range(n):
        a = step(X, Y)
        b = eager_step(X, Y)
        worst = max(worst, rel(a, b))
        for p, q in zip(m1.parameters(), m2.parameters()):
            worst = max(worst, rel(p, q))
    return worst
"
    );
    let mut e = Engine::new();
    e.set_compile(true);
    e.set_output(Box::new(|_| {}));
    e.run_source(&src, "train_opt.dl").expect("setup");
    let warm: f64 = e.eval_as("run(5)").expect("warm-up steps");
    let before = fresh(&e, "step");
    let steady: f64 = e.eval_as("run(10)").expect("steady steps");
    assert_eq!(
        fresh(&e, "step"),
        before,
        "{opt}: steady-state steps allocated"
    );
    assert!(warm <= 1e-5 && steady <= 1e-5, "{opt}: {warm} {steady}");
    e.eval_as("graph(step, X, Y)").expect("graph text")
}

/// Per fused kernel line of the graph text, how many values it writes (1 without a
/// `writes (...)` list).
fn writes_per_kernel(text: &str) -> Vec<usize> {
    text.lines()
        .filter(|l| l.starts_with("fused kernel"))
        .map(|l| match l.split_once(" writes (") {
            Some((_, w)) => w.split(", ").count(),
            None => 1,
        })
        .collect()
}

/// Backward's transposed weight gradients are computed transposed by gemm (the layout
/// pass), never as a strided copy of a product: no contiguous(permute(..)) in `text`.
fn assert_no_transposed_copy(text: &str) {
    let permutes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("= permute("))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let copied = text
        .lines()
        .filter(|l| l.contains("= contiguous("))
        .any(|l| {
            permutes
                .iter()
                .any(|p| l.contains(&format!("contiguous({p})")))
        });
    assert!(!copied, "a transposed product is still copied:\n{text}");
}

/// Adam and AdamW (whose parameter and moment writes swap buffers with the kernels'
/// outputs, so no step after warm-up allocates one) train like eager step by step.
#[test]
fn adam_and_adamw_update_each_parameter_in_one_kernel_matching_eager() {
    for opt in ["optim.Adam", "optim.AdamW"] {
        let text = train_against_eager(&format!("{opt}(ps, lr=0.01)"));
        // Six parameters, each one kernel writing m, v and p.
        let triples = writes_per_kernel(&text).iter().filter(|&&w| w == 3).count();
        assert_eq!(triples, 6, "{opt}:\n{text}");
        // Adam's kernels, and AdamW's with its decay `p * (1 - lr * wd)`, run eager's
        // fused update.
        let fused = text.matches("(fused Adam update)").count();
        assert_eq!(fused, 6, "{opt}:\n{text}");
        assert_no_transposed_copy(&text);
    }
}

/// Plain SGD: each parameter's `p - lr * g` kernel runs eager's fused SGD update.
#[test]
fn sgd_updates_run_the_fused_routine_matching_eager() {
    let text = train_against_eager("optim.SGD(ps, lr=0.05)");
    assert_eq!(text.matches("(fused SGD update)").count(), 6, "{text}");
}

#[test]
fn sgd_with_momentum_trains_like_eager_without_steady_state_allocation() {
    let text = train_against_eager("optim.SGD(ps, lr=0.05, momentum=0.9)");
    // Each parameter's buffer and parameter updates share one kernel.
    let pairs = writes_per_kernel(&text).iter().filter(|&&w| w == 2).count();
    assert!(pairs >= 6, "{text}");
}

/// W5-sized products (64x300x256: 4.9M multiply-adds, split over the kernels' thread
/// team) and parameter updates (77k elements: kernels split into tasks on the team):
/// compiled training still equals eager training step by step, for SGD and Adam.
#[test]
fn team_split_products_and_updates_train_like_eager() {
    for opt in ["optim.SGD(ps, lr=0.01)", "optim.Adam(ps, lr=1e-3)"] {
        let text = train_sized_against_eager(opt, (64, 300, 256));
        assert!(
            text.contains("f32[64, 300]"),
            "{opt}: the sizes reached the graph"
        );
    }
}

/// A batched Linear (`x[B, T, D] @ W.T`) into the exact GELU and a second Linear,
/// compiled: the GELU's gradient (from the second Linear's input gradient, a product)
/// runs eager's fused pass and W's gradient is eager's one product over all
/// B*T rows, so W's gradient equals eager's bit for bit (the JIT's erf, or a batched
/// product summed over the batch, round differently), and the graph has no
/// `[B, D, O]` product summed over the batch.
#[test]
fn gelu_and_batched_weight_gradients_equal_eagers_bits() {
    let src = "
import nn
import optim
manual_seed(5)
lin = nn.Linear(24, 40)
out = nn.Linear(40, 8)
opt = optim.SGD(list(lin.parameters()) + list(out.parameters()), lr=0.1)
X = randn(6, 10, 24) * 2.0
R = randn(6, 10, 8)
def loss_of(x):
    return (out(gelu(lin(x))) * R).sum()
@compile
def step(x):
    opt.zero_grad()
    loss = loss_of(x)
    loss.backward()
    return loss
for _ in range(3):
    step(X)
compiled = lin.weight.grad.clone()
opt.zero_grad()
loss_of(X).backward()
eager = lin.weight.grad.clone()
";
    let mut e = Engine::new();
    e.set_compile(true);
    e.set_output(Box::new(|_| {}));
    e.run_source(src, "gelu_grad.dl").expect("setup");
    let hits: i64 = e.eval_as("compile_stats(step)['hits']").expect("stats");
    assert_eq!(hits, 2, "the last two calls replayed the graph");
    let same: bool = e
        .eval_as("bool((compiled == eager).all())")
        .expect("compare");
    let worst: f64 = e
        .eval_as("((compiled - eager).abs().max() / eager.abs().max()).item()")
        .expect("difference");
    assert!(same, "W's gradient differs from eager's (relative {worst})");
    let text: String = e.eval_as("graph(step, X)").expect("graph text");
    assert!(
        !text.contains("f32[6, 24, 40]"),
        "a batched product:\n{text}"
    );
}
