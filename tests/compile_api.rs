//! `@compile` guards, cache, fallbacks, errors and introspection, checked through
//! `compile_stats(f)` (captures / hits / fallbacks / versions), results computed by hand,
//! and eager runs of the same scripts. IR text snapshots live in
//! tests/compile/snapshots/*.ir (`KILN_BLESS=1` rewrites them).

mod common;

use common::{engine, int, rendered_error, snapshot, stats, text, with_last_graph};
use kiln::compile::capture::cache::EntryKind;

#[test]
fn shape_change_recompiles_and_same_shape_hits() {
    let mut e = engine(
        "@compile\ndef f(x):\n    return x * 2 + 1\n\na = f(ones(3))\nb = f(ones(3))\nc = f(ones(4))\n",
    );
    assert_eq!(stats(&mut e, "f"), [2, 1, 0, 2]);
    assert_eq!(text(&mut e, "str(b.tolist())"), "[3.0, 3.0, 3.0]");
    assert_eq!(int(&mut e, "c.shape[0]"), 4);
}

#[test]
fn non_tensor_argument_change_recompiles() {
    let mut e = engine(
        "@compile\ndef g(x, k):\n    return x * k\n\ng(ones(2), 2)\ng(ones(2), 2)\nr = g(ones(2), 3)\n",
    );
    assert_eq!(stats(&mut e, "g"), [2, 1, 0, 2]);
    assert_eq!(text(&mut e, "str(r.tolist())"), "[3.0, 3.0]");
}

const PARAM: &str = "class M:\n    def __init__(self):\n        self.w = ones(2)\n\nm = M()\n\n@compile\ndef h(x):\n    return x * m.w\n\nh(ones(2))\n";

#[test]
fn rebinding_a_parameter_recompiles() {
    let mut e = engine(PARAM);
    e.run_source("m.w = full((2,), 5.0)\nr = h(ones(2))\n", "t2.dl")
        .ok();
    assert_eq!(text(&mut e, "str(r.tolist())"), "[5.0, 5.0]");
    assert_eq!(stats(&mut e, "h"), [2, 0, 0, 2]);
}

#[test]
fn in_place_update_of_a_parameter_is_seen() {
    let mut e = engine(PARAM);
    e.run_source("m.w.mul_(3.0)\nr = h(ones(2))\n", "t2.dl")
        .ok();
    assert_eq!(text(&mut e, "str(r.tolist())"), "[3.0, 3.0]");
    assert_eq!(stats(&mut e, "h"), [1, 1, 0, 1]);
}

#[test]
fn global_scalar_is_guarded() {
    let mut e = engine("lr = 0.5\n@compile\ndef s(x):\n    return x * lr\n\ns(ones(1))\ns(ones(1))\nlr = 2.0\nr = s(ones(1))\n");
    assert_eq!(text(&mut e, "str(r.tolist())"), "[2.0]");
    assert_eq!(stats(&mut e, "s"), [2, 1, 0, 2]);
}

#[test]
fn cache_limit_falls_back_to_eager() {
    // Ten distinct non-tensor arguments: ten keys (tensor sizes alone would share one
    // symbolic version since issue 6, see tests/compile_dynamic.rs).
    let mut e = engine("@compile\ndef f(x, k):\n    return x.sum() * k\n\nout = [f(ones(2), k).item() for k in range(1, 11)]\n");
    assert_eq!(stats(&mut e, "f"), [8, 0, 2, 8]);
    assert_eq!(
        text(&mut e, "str(out)"),
        "[2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0]"
    );
}

#[test]
fn item_steering_control_flow_falls_back_with_the_right_answer() {
    let src = "@compile\ndef steer(x):\n    if x.sum().item() > 0:\n        return x * 2\n    return x - 1\n\na = steer(ones(2))\nb = steer(-ones(2))\nc = steer(ones(2))\n";
    let mut e = engine(src);
    assert_eq!(
        text(&mut e, "str([a.tolist(), b.tolist(), c.tolist()])"),
        "[[2.0, 2.0], [-2.0, -2.0], [2.0, 2.0]]"
    );
    let [captures, hits, fallbacks, versions] = stats(&mut e, "steer");
    assert_eq!((captures, hits, versions), (1, 0, 1));
    assert_eq!(fallbacks, 2);
    assert_eq!(int(&mut e, "compile_stats(steer)['warnings']"), 1);
    let why = text(&mut e, "explain(steer, ones(2))");
    assert!(why.contains("item") && why.contains("t.dl:3:"), "{why}");
}

#[test]
fn python_mutations_and_print_keep_eager_semantics() {
    let mut e = engine("acc = []\n@compile\ndef k(x):\n    acc.append(1)\n    print('hi')\n    return x + 1\n\nk(ones(1))\nk(ones(1))\n");
    assert_eq!(int(&mut e, "len(acc)"), 2);
    let why = text(&mut e, "explain(k, ones(1))");
    assert!(why.contains("mutation"), "{why}");
}

/// Attribute stores on an outside object (plain and augmented, the interpreter's
/// hinted fast paths) must still be seen by capture: every call counts, as in eager.
#[test]
fn attribute_counters_keep_eager_semantics() {
    let src = "class C:\n    def __init__(self):\n        self.calls = 0\n        self.n = 0\n\nc = C()\n@compile\ndef k(x):\n    c.calls += 1\n    c.n = c.n + 2\n    return x + 1\n\nfor i in range(3):\n    k(ones(1))\n";
    let mut e = engine(src);
    assert_eq!(int(&mut e, "c.calls"), 3);
    assert_eq!(int(&mut e, "c.n"), 6);
    let why = text(&mut e, "explain(k, ones(1))");
    assert!(why.contains("mutation"), "{why}");
}

#[test]
fn gradients_required_are_compiled_and_differentiable() {
    let mut e = engine("@compile\ndef f(x):\n    return (x * x).sum()\n\nx = ones(3, requires_grad=True)\ny = f(x)\ny.backward()\ny = f(x)\ny.backward()\n");
    // d/dx sum(x*x) = 2x at x = 1, accumulated over two calls.
    assert_eq!(text(&mut e, "str(x.grad.tolist())"), "[4.0, 4.0, 4.0]");
    assert_eq!(text(&mut e, "explain(f, x)"), "captured: no graph breaks");
    assert_eq!(stats(&mut e, "f"), [1, 1, 0, 1]);
}

#[test]
fn shape_error_is_eagers_error() {
    let src =
        "@compile\ndef f(x, y):\n    z = x + 1\n    return z @ y\n\nf(ones(2, 3), ones(2, 3))\n";
    let (eager, compiled) = (rendered_error(src, false), rendered_error(src, true));
    assert!(
        eager.contains("ShapeError") && eager.contains("inner dimensions"),
        "{eager}"
    );
    assert_eq!(eager, compiled);
}

#[test]
fn results_match_eager_after_replay() {
    let src = "@compile\ndef f(x, w):\n    return softmax(tanh(x @ w), dim=-1).sum(0)\n\nmanual_seed(1)\nx = randn(4, 3)\nw = randn(3, 5)\na = f(x, w)\nb = f(x, w)\n";
    let mut e = engine(src);
    assert_eq!(stats(&mut e, "f"), [1, 1, 0, 1]);
    assert_eq!(int(&mut e, "int((a == b).all().item())"), 1);
    e.set_compile(false);
    e.run_source("c = f(x, w)\n", "t2.dl").ok();
    assert_eq!(int(&mut e, "int((a == c).all().item())"), 1);
}

#[test]
fn compiled_module_call() {
    let src = "import nn\nmanual_seed(0)\nnet = nn.Linear(3, 2)\ncnet = compile(net)\nx = randn(4, 3)\nwith no_grad():\n    a = cnet(x)\n    b = cnet(x)\n    c = net(x)\n";
    let mut e = engine(src);
    assert_eq!(stats(&mut e, "cnet"), [1, 1, 0, 1]);
    assert_eq!(int(&mut e, "int((b == c).all().item())"), 1);
}

#[test]
fn compiled_module_is_an_nn_module() {
    // As torch.compile's OptimizedModule: an nn.Module, not an instance of the
    // module's own class (torch 2.15 prints True False True for the same program).
    let mut e = engine(
        "import nn\nclass Net(nn.Module):\n    def __init__(self):\n        self.l = nn.Linear(2, 2)\n\n\
         cnet = compile(Net())\n@compile\ndef f(x):\n    return x\n",
    );
    assert_eq!(
        text(
            &mut e,
            "str((isinstance(cnet, nn.Module), isinstance(cnet, Net), \
             isinstance(cnet._orig_mod, Net), isinstance(f, nn.Module)))"
        ),
        "(True, False, True, False)"
    );
}

#[test]
fn eager_check_names_the_first_differing_node() {
    // A deliberately wrong kernel: the two fused groups' compiled kernels are swapped,
    // so the first group (line 5) computes the second's formula. The check names the
    // differing output, then the first node off its reference evaluation: that group's
    // root, with its line and both values.
    let mut e = engine(
        "manual_seed(0)\nW = randn(3, 3)\n@compile(check=True)\ndef f(x):\n    \
         a = (x * 2.0 + 1.0) @ W\n    return tanh(a * 3.0 - 0.5)\n\nx = randn(4, 3)\nf(x)\nf(x)\n",
    );
    {
        let v = e.get_global("f");
        let Some(kiln::Value::Compiled(cf)) = &v else {
            panic!("f is not compiled");
        };
        let mut c = cf.cache.borrow_mut();
        let Some(EntryKind::Graph(g)) = c.entries.last_mut().map(|x| &mut x.kind) else {
            panic!("f has no graph");
        };
        let fused = &mut g.compiled.fused;
        assert_eq!(fused.len(), 2, "{}", g.compiled.to_text(None));
        let k0 = fused[0].kernel.clone();
        fused[0].kernel = fused[1].kernel.clone();
        fused[1].kernel = k0;
    }
    let err = match e.run_source("y = f(x)\n", "u.dl") {
        Ok(_) => panic!("the wrong kernel went unnoticed"),
        Err(err) => e.render_error(&err),
    };
    assert!(
        err.contains("compiled and eager differ in returned tensor 0")
            && err.contains("the first IR node that differs from its reference evaluation is %")
            && err.contains("= add(...) at t.dl:5")
            && err.matches(" vs reference ").count() == 1
            && err.contains("tolerance"),
        "{err}"
    );
    // Unperturbed, the same call passes the check.
    let mut ok = engine(
        "manual_seed(0)\nW = randn(3, 3)\n@compile(check=True)\ndef f(x):\n    \
         a = (x * 2.0 + 1.0) @ W\n    return tanh(a * 3.0 - 0.5)\n\nx = randn(4, 3)\nf(x)\nf(x)\ny = f(x)\n",
    );
    assert_eq!(stats(&mut ok, "f")[1], 2);
}

#[test]
fn ir_snapshots() {
    let src = "@compile\ndef gelu_ish(x):\n    return 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x ** 3)))\n\n\
               @compile\ndef norm_rows(x, w):\n    m = x.mean(dim=-1, keepdim=True)\n    return ((x - m) @ w).relu().sum(dim=0)\n\n\
               @compile\ndef views(x):\n    return cat([x.t(), x[:, 1:].reshape(3, -1)], dim=1), x.max(dim=0)\n";
    let mut e = engine(src);
    let cases = [
        ("gelu_ish", "graph(gelu_ish, ones(4, 8))"),
        ("norm_rows", "graph(norm_rows, ones(2, 3), ones(3, 4))"),
        ("views", "graph(views, ones(3, 3))"),
    ];
    for (name, expr) in cases {
        snapshot(name, &text(&mut e, expr));
    }
    let dot = text(&mut e, "graph(gelu_ish, ones(4, 8), format='dot')");
    assert!(
        dot.starts_with("digraph") && dot.contains("-> out0"),
        "{dot}"
    );
}

#[test]
fn stats_counts_capture_once_for_many_calls() {
    let mut e =
        engine("@compile\ndef f(x):\n    return x + 1\n\nfor i in range(50):\n    f(ones(2))\n");
    assert_eq!(stats(&mut e, "f"), [1, 49, 0, 1]);
}

/// The linalg train step of tests/compile/linalg.dl in small: zero_grad, a loss through
/// cholesky/solve/inv/slogdet/det, backward and the SGD step are one graph with no
/// break; the backward's rules are graph ops too (solve's gradient is a second solve).
#[test]
fn linalg_train_step_is_one_graph() {
    let mut e = engine(
        "import linalg\nimport optim\n\
         P = tensor([[1.0, 0.2], [-0.3, 0.8]], requires_grad=True)\n\
         opt = optim.SGD([P], lr=0.05)\n\n\
         @compile\ndef step(r):\n    opt.zero_grad()\n    K = P @ P.T + eye(2)\n\
         \x20   loss = (linalg.solve(K, r) ** 2).sum() + (linalg.inv(K) * eye(2)).sum()\n\
         \x20   loss = loss + (linalg.cholesky(K) ** 2).sum() + linalg.slogdet(K)[1] + linalg.det(K)\n\
         \x20   loss.backward()\n    opt.step()\n    return loss\n\n\
         losses = [step(ones(2, 1)).item() for i in range(4)]\n",
    );
    assert_eq!(
        text(&mut e, "explain(step, ones(2, 1))"),
        "captured: no graph breaks"
    );
    assert_eq!(stats(&mut e, "step"), [1, 3, 0, 1]);
    let ir = with_last_graph(&e, "step", |g| g.compiled.to_text(None));
    for op in [
        "linalg.cholesky",
        "linalg.inv",
        "linalg.slogdet",
        "linalg.det",
    ] {
        assert!(ir.contains(op), "{op}:\n{ir}");
    }
    assert!(ir.matches("linalg.solve").count() >= 2, "{ir}");
    // The losses decrease (the update ran each time).
    let l: Vec<f64> = (0..4)
        .map(|i| text(&mut e, &format!("str(losses[{i}])")).parse().unwrap())
        .collect();
    assert!(l.windows(2).all(|w| w[1] < w[0]), "{l:?}");
}

/// A singular matrix reaching a replayed graph: the graph's kernel fails, the call
/// reruns eagerly, and the error is eager's (LinAlgError, message, line).
#[test]
fn singular_matrix_in_a_replayed_graph_raises_eagers_error() {
    let src = "import linalg\n\n@compile\ndef f(a):\n    y = a * 2.0\n    return linalg.inv(y) + linalg.det(y)\n\n\
               f(tensor([[2.0, 1.0], [1.0, 3.0]]))\nf(tensor([[2.0, 1.0], [1.0, 3.0]]))\n\
               f(tensor([[1.0, 2.0], [2.0, 4.0]]))\n";
    let (eager, compiled) = (rendered_error(src, false), rendered_error(src, true));
    assert!(
        eager.contains("LinAlgError: linalg.inv:")
            && eager.contains("singular")
            && eager.contains("File \"t.dl\", line 6, in f"),
        "{eager}"
    );
    assert_eq!(eager, compiled);
    let mut e = engine(&src.replace(
        "f(tensor([[1.0, 2.0], [2.0, 4.0]]))\n",
        "try:\n    f(tensor([[1.0, 2.0], [2.0, 4.0]]))\nexcept LinAlgError:\n    pass\n",
    ));
    assert_eq!(stats(&mut e, "f"), [1, 1, 1, 1]);
}

#[test]
fn dropout_graph_draws_one_mask_of_the_input_shape() {
    // F.dropout's `empty_like(x).bernoulli_(1 - p)`: the zero buffer made only for its
    // shape is dropped (the mask reads x's shape); the draw stays.
    let mut e = engine(
        "import nn\n@compile\ndef f(x):\n    return nn.functional.dropout(x, 0.25)\n\n\
         g = graph(f, ones(3, 2))\n",
    );
    let g = text(&mut e, "g");
    assert!(
        g.contains("bernoulli_like(%0, p=0.75, dtype=float32)"),
        "{g}"
    );
    assert!(!g.contains("full_like"), "{g}");
}

#[test]
fn an_in_place_write_through_a_detached_alias_falls_back_with_eagers_values() {
    // d shares y's storage: d.add_(1) changes y too, so y + d = 2 * (2x + 1).
    let mut e = engine(
        "@compile\ndef f(x):\n    y = x * 2\n    d = y.detach()\n    d.add_(1.0)\n    \
         return y + d\n\nr = [f(ones(3)).tolist() for _ in range(2)]\n",
    );
    assert_eq!(text(&mut e, "str(r)"), "[[6.0, 6.0, 6.0], [6.0, 6.0, 6.0]]");
    assert_eq!(text(&mut e, "str(compile_stats(f)['guards'])"), "['eager']");
}
