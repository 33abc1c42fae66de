//! The op table (`kiln::ops::table`): the layers derived from it agree with it, a fused
//! kernel refuses the ops the table marks unfusable, and `log1p` (added through the
//! table and one mathfn routine) is right eagerly (values from CPython's math.log1p),
//! in gradients (finite differences), in fused kernels (f64 truth) and in ONNX export;
//! the exact GELU's float32 values and gradients match PyTorch's.
// Truth values are pasted with the digits CPython printed (ln 2 among them).
#![allow(clippy::excessive_precision, clippy::approx_constant)]

mod codegen_common;
mod common;

use codegen_common::{jit_unary, sweep, ulp_error};
use common::{eager_engine, floats, text};
use kiln::autograd::backward;
use kiln::compile::{compile, run_reference, Access, Kernel, Op, Output};
use kiln::ops::{self, UnaryOp};
use kiln::tensor::creation::from_f32;
use kiln::Engine;

#[test]
fn every_method_name_names_its_op_and_globals_agree() {
    let mut e = eager_engine("t = tensor([0.25, -0.5, 2.0])\nb = tensor([True, False])\n");
    let t = from_f32(vec![0.25, -0.5, 2.0], &[3]).unwrap();
    for &op in UnaryOp::ALL {
        for &m in op.methods() {
            assert_eq!(UnaryOp::of_method(m), Some(op), "{m}");
            let arg = if op.takes_float() { "t" } else { "b" };
            let method = text(&mut e, &format!("str({arg}.{m}().tolist())"));
            if op.takes_float() {
                let direct = f32s(&ops::unary(op, &t).unwrap());
                let shown = floats(&method);
                assert_eq!(shown.len(), 3, "{m}: {method}");
                for (s, d) in shown.iter().zip(&direct) {
                    assert!(
                        *s == f64::from(*d) || (s.is_nan() && d.is_nan()),
                        "{m}: {s} vs {d}"
                    );
                }
            } else {
                assert_eq!(method, "[False, True]", "{m}");
            }
            let global = e.eval_as::<String>(&format!("str({m}({arg}).tolist())"));
            // Non-global names may still be Python builtins (`abs(t)`, `round(t)`).
            match global {
                Ok(g) => assert_eq!(g, method, "{m}()"),
                Err(err) => assert!(!op.is_global(), "{m}(): {}", err.message),
            }
        }
    }
    assert_eq!(UnaryOp::of_method("nope"), None);
}

/// Every Tensor method name of the binary table dispatches to its row (`a.mul(b)` is
/// `ops::binary(Mul, a, b)`), and its global function (`mul(a, b)`) gives the same
/// result exactly where the row says it is global.
#[test]
fn every_binary_method_name_names_its_op_and_globals_agree() {
    use kiln::ops::BinaryOp;
    use kiln::tensor::creation::from_bool;
    let mut e = eager_engine(
        "a = tensor([0.75, -1.5, 2.0])\nb = tensor([0.5, 2.0, 2.0])\n\
         p = tensor([True, True, False])\nq = tensor([True, False, False])\n",
    );
    let fa = from_f32(vec![0.75, -1.5, 2.0], &[3]).unwrap();
    let fb = from_f32(vec![0.5, 2.0, 2.0], &[3]).unwrap();
    let bp = from_bool(vec![true, true, false], &[3]).unwrap();
    let bq = from_bool(vec![true, false, false], &[3]).unwrap();
    for &op in BinaryOp::ALL {
        assert!(!op.methods().is_empty(), "{op:?} has no method name");
        for &m in op.methods() {
            assert_eq!(BinaryOp::of_method(m), Some(op), "{m}");
            let (x, y, names) = if op.is_logical() {
                (&bp, &bq, ("p", "q"))
            } else {
                (&fa, &fb, ("a", "b"))
            };
            let direct = f32s(&ops::binary(op, x, y).unwrap());
            let method = text(
                &mut e,
                &format!("str({}.{m}({}).tolist())", names.0, names.1),
            );
            let shown = floats(&method.replace("True", "1.0").replace("False", "0.0"));
            let direct: Vec<f64> = direct.iter().map(|&d| f64::from(d)).collect();
            assert_eq!(shown, direct, "{m}: {method}");
            let global =
                e.eval_as::<String>(&format!("str({m}({}, {}).tolist())", names.0, names.1));
            match global {
                Ok(g) => assert_eq!(g, method, "{m}()"),
                Err(err) => assert!(!op.is_global(), "{m}(): {}", err.message),
            }
        }
    }
    assert_eq!(BinaryOp::of_method("nope"), None);
}

/// Every in-place method name of the binary rows (`add_`) names its row, is its
/// out-of-place method with `_`, and writes that op's result into the tensor it
/// returns; no in-place method of a binary op is dispatched outside the table (a name
/// missing from a row's `inplace` field fails here).
#[test]
fn every_binary_inplace_method_names_its_op() {
    use kiln::interp::builtins::tensor_methods::TENSOR_METHODS;
    use kiln::ops::BinaryOp;
    let mut e = eager_engine("a = tensor([0.75, -1.5, 2.0])\nb = tensor([0.5, 2.0, 2.0])\n");
    let fa = from_f32(vec![0.75, -1.5, 2.0], &[3]).unwrap();
    let fb = from_f32(vec![0.5, 2.0, 2.0], &[3]).unwrap();
    let mut seen = 0;
    for &op in BinaryOp::ALL {
        for &m in op.inplace_methods() {
            seen += 1;
            assert_eq!(BinaryOp::of_inplace_method(m), Some(op), "{m}");
            let stem = m.strip_suffix('_').and_then(BinaryOp::of_method);
            assert_eq!(stem, Some(op), "{m}: not the op's method with `_`");
            assert!(TENSOR_METHODS.contains(&m), "{m}: not a listed method");
            let want: Vec<f64> = f32s(&ops::binary(op, &fa, &fb).unwrap())
                .iter()
                .map(|&d| f64::from(d))
                .collect();
            let got = text(
                &mut e,
                &format!("str([(r is c, r.tolist()) for c in [a.clone()] for r in [c.{m}(b)]][0])"),
            );
            assert!(got.starts_with("(True, "), "{m}: {got}");
            assert_eq!(floats(&got.replace("True", "")), want, "{m}: {got}");
        }
    }
    assert_eq!(seen, 5, "add_ sub_ mul_ div_ pow_");
    for name in TENSOR_METHODS.iter() {
        let op = name.strip_suffix('_').and_then(BinaryOp::of_method);
        if let Some(op) = op {
            assert!(
                op.inplace_methods().contains(name),
                "{name}: declare it in the row's `inplace` field"
            );
        }
    }
    assert_eq!(BinaryOp::of_inplace_method("add"), None);
    // pow_ goes through the row too: a float result is not written into an int64 tensor
    // (it was truncated silently before; torch raises as well), and `exponent=` works
    let int_pow = e.eval_as::<String>("str(tensor([2, 3]).pow_(0.5))");
    let msg = int_pow.expect_err("int64 pow_(0.5) must raise").message;
    assert!(msg.contains("can't be cast"), "{msg}");
    let kw = text(&mut e, "str(tensor([2.0, 3.0]).pow_(exponent=2).tolist())");
    assert_eq!(kw, "[4.0, 9.0]");
}

fn one_op_kernel(op: UnaryOp) -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let y = k.push(Op::Unary(op, x));
    k.outputs.push(Output {
        value: y,
        access: Access::Contiguous,
    });
    k
}

#[test]
fn kernels_hold_exactly_the_fusable_ops() {
    let xs = [0.5f32, -0.25, 3.0, 0.0];
    for &op in UnaryOp::ALL {
        let k = one_op_kernel(op);
        if op.fusable() {
            let got = jit_unary(op, &xs);
            for (&x, &g) in xs.iter().zip(&got) {
                let want = kiln::compile::jit::reference::unary(op, x);
                let close = (g - want).abs() <= 1e-5 * want.abs().max(1.0) || g == want;
                assert!(
                    close || (g.is_nan() && want.is_nan()),
                    "{op:?}({x}): {g} vs {want}"
                );
            }
        } else {
            let err = compile(&k).expect_err("an unfusable op is refused");
            assert!(err.message.contains(op.name()), "{}", err.message);
            assert!(k.validate().is_err());
            let mut out = [0.0f32; 1];
            let st = [1isize];
            let r = run_reference(
                &k,
                &[kiln::compile::BufView::new(&[1.0], &st)],
                &mut [kiln::compile::BufViewMut::new(&mut out, &st)],
                &[1],
                None,
            );
            assert!(r.is_err(), "{op:?}: reference refuses it too");
        }
    }
}

fn f32s(t: &kiln::Tensor) -> Vec<f32> {
    t.to_f32_vec().unwrap()
}

#[test]
fn log1p_eager_values_match_cpython() {
    // f32 inputs and float32(math.log1p(float(x))) from CPython 3.11.
    let cases: [(f32, f32); 9] = [
        (1e-8, 9.99999993922529e-09),
        (-1e-8, -9.99999993922529e-09),
        (1e-4, 9.999499889090657e-05),
        (0.5, 0.405_465_1),
        (-0.5, -0.693_147_2),
        (1.0, 0.693_147_2),
        (3.0, 1.386_294_4),
        (100.0, 4.615_120_4),
        (-0.999, -6.907_768),
    ];
    let x = from_f32(cases.iter().map(|c| c.0).collect(), &[9]).unwrap();
    let got = f32s(&ops::unary(UnaryOp::Log1p, &x).unwrap());
    for ((x, want), g) in cases.iter().zip(&got) {
        let ulps = (g.to_bits() as i64 - want.to_bits() as i64).abs();
        assert!(ulps <= 1, "log1p({x}) = {g}, want {want}");
    }
    let special = from_f32(vec![-1.0, -2.0, f32::INFINITY, -0.0], &[4]).unwrap();
    let s = f32s(&ops::unary(UnaryOp::Log1p, &special).unwrap());
    assert_eq!(s[0], f32::NEG_INFINITY);
    assert!(s[1].is_nan());
    assert_eq!(s[2], f32::INFINITY);
    assert!(
        s[3] == 0.0 && s[3].is_sign_negative(),
        "log1p(-0.0) is -0.0"
    );
    // int64 in, float32 out; method and global spellings.
    let mut e = eager_engine("a = log1p(tensor([0, 1]))\nb = tensor([3.0]).log1p()\n");
    assert_eq!(text(&mut e, "str(a.dtype)"), "torch.float32");
    assert_eq!(text(&mut e, "str(a.tolist())"), "[0.0, 0.6931471824645996]");
    assert_eq!(text(&mut e, "str(b.tolist())"), "[1.3862943649291992]");
}

#[test]
fn log1p_gradient_matches_finite_differences() {
    let xs = vec![-0.9f32, -0.3, 0.0, 1e-3, 0.7, 2.5, 40.0];
    let x = from_f32(xs.clone(), &[7]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = ops::unary(UnaryOp::Log1p, &x).unwrap();
    let loss = y.sum(&[], false).unwrap();
    backward(&loss, None, false).unwrap();
    let g = f32s(&x.grad().expect("a gradient"));
    let eps = 1e-3f64;
    for (i, &x0) in xs.iter().enumerate() {
        let f = |d: f64| {
            let t = from_f32(vec![(f64::from(x0) + d) as f32], &[1]).unwrap();
            f64::from(f32s(&ops::unary(UnaryOp::Log1p, &t).unwrap())[0])
        };
        let fd = (f(eps) - f(-eps)) / (2.0 * eps);
        let ana = f64::from(g[i]);
        assert!(
            (fd - ana).abs() <= 1e-2 * (1.0 + fd.abs()),
            "d log1p at {x0}: autograd {ana} vs finite difference {fd}"
        );
    }
}

#[test]
fn log1p_fused_kernel_within_4_ulp_of_f64() {
    let mut xs = sweep(997);
    xs.retain(|&x| x >= -1.0 || x.is_nan());
    xs.extend(codegen_common::linspace(-0.999, 2.0, 100_001));
    xs.extend([
        1e-8,
        -1e-8,
        1e-30,
        -1e-40,
        -0.0,
        0.0,
        -1.0,
        -2.0,
        f32::INFINITY,
    ]);
    let got = jit_unary(UnaryOp::Log1p, &xs);
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &g) in xs.iter().zip(&got) {
        let e = ulp_error(g, f64::from(x).ln_1p());
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    assert!(worst.0 <= 4.0, "log1p: {} ulp at {:e}", worst.0, worst.1);
    let tail = &got[got.len() - 9..];
    assert_eq!(tail[..4], [1e-8, -1e-8, 1e-30, -1e-40]);
    assert!(tail[4] == 0.0 && tail[4].is_sign_negative());
    assert_eq!(tail[6], f32::NEG_INFINITY);
    assert!(tail[7].is_nan());
    assert_eq!(tail[8], f32::INFINITY);
}

#[test]
fn log1p_exports_to_onnx_as_log_of_add() {
    let dir = std::env::temp_dir().join(format!("kiln_ops_table_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.onnx");
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e.set("out", path.display().to_string());
    let src = "def f(x):\n    return log1p(x) * 2.0\nexport_onnx(f, (randn(4),), out)\n";
    if let Err(err) = e.run_source(src, "t.dl") {
        panic!("{}", e.render_error(&err));
    }
    let m = kiln::onnx::decode(&std::fs::read(&path).unwrap()).unwrap();
    let g = m.graph.as_ref().expect("a graph");
    let types: Vec<&str> = g.node.iter().map(|n| n.op_type.as_str()).collect();
    assert_eq!(types, ["Add", "Log", "Mul", "Identity"], "{types:?}");
    assert_eq!(g.node[1].input, g.node[0].output, "Log reads the Add");
    assert!(g.node[0].input.contains(&g.input[0].name), "Add reads x");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Domain-safe values every unary op accepts (acos/atanh/log/sqrt need (0, 1)).
const VALS: &str = "[[0.3, 0.55, 0.8], [0.15, 0.45, 0.7]]";

/// The expression of `A` that exercises a unary op without a method name.
fn unary_expr(op: UnaryOp) -> String {
    if let Some(m) = op.methods().first() {
        return format!("A.{m}()");
    }
    match format!("{op:?}").as_str() {
        "Recip" => "1.0 / A".into(),
        "Gelu" => "gelu(A)".into(),
        "GeluTanh" => "gelu(A, approximate='tanh')".into(),
        other => panic!("unary op {other} has no method: add its expression here"),
    }
}

/// The expression (of the leaf `A`, shape [2, 3], and the helpers `I`, `K`, `X4`) that
/// creates each backward node, by its op (the `IrOp` variant of a primitive op's node,
/// else its `BackwardOp` variant).
const BACKWARD_EXPRS: &[(&str, &str)] = &[
    ("Binary", "A * A / (A + 2.0) - A ** 2"),
    ("BinaryScalar", "(2.0 - A) * 3.0 + A ** 2"),
    ("Unary", "A.exp()"),
    ("Clamp", "A.clamp(0.2, 0.6)"),
    ("Where", "where(A > 0.5, A, A * 3.0)"),
    ("Clone", "A.clone()"),
    // float <-> float `.to(dtype)` (ToCopyBackward0): compiled kernels run float64
    (
        "Cast",
        "A.double().float() * K + A.to(float64).sum().float() + (A * 2.0).to(float64).exp().float()",
    ),
    ("Sum", "A.sum(0) + A.mean(1).sum()"),
    ("Mean", "A.mean(0) * K[0]"),
    ("ExtremeDim", "A.max(1)[0].sum() + A.min(0)[0].sum()"),
    ("ExtremeAll", "A.min() + A.max()"),
    ("Var", "A.var(1) + A.std()"),
    ("Prod", "A.prod(1)"),
    ("LogSumExp", "A.logsumexp(1)"),
    ("Softmax", "A.softmax(1) * K"),
    ("LogSoftmax", "A.log_softmax(0)"),
    ("Cumsum", "A.cumsum(1) * K"),
    ("Norm", "A.norm() + A.norm(dim=1).sum()"),
    ("Reshape", "A.view(3, 2) @ A"),
    ("Permute", "A.transpose(0, 1) * K.transpose(0, 1)"),
    ("Expand", "A[0].expand(4, 3) * 2.0"),
    (
        "Index",
        "A[1:, ::2] + A[:, I].sum() + A.index_select(1, I).sum()",
    ),
    ("Gather", "A.gather(1, I.view(1, 2).expand(2, 2))"),
    (
        "ScatterAdd",
        "zeros(2, 4).scatter_add(1, I.view(1, 2).expand(2, 2), A[:, :2])",
    ),
    ("MaskedFill", "A.masked_fill(A > 0.5, 0.0) * K"),
    ("Cat", "cat([A, A * 2.0], 1)"),
    ("Matmul", "A @ A.T"),
    ("Conv2d", "conv2d(X4 * A.sum(), A.view(1, 1, 2, 3))"),
    ("MaxPool2d", "max_pool2d(X4 * A.sum() + A.mean(), 2)"),
    ("AvgPool2d", "avg_pool2d(X4 * A.sum(), 2)"),
    // the fused norms, through their builtins (nn.functional's batch_norm/layer_norm)
    (
        "BatchNorm",
        "_batch_norm(A.view(3, 2) * K.view(3, 2), None, None, A[0, :2], A[1, :2], True, 0.1, 1e-5)",
    ),
    ("LayerNorm", "_layer_norm(A * K, 1, A[0], A[1], 1e-5)"),
    // the fused attention: IR op scaled_dot_product_attention, gradient kernels per q/k/v
    (
        "Attention",
        "scaled_dot_product_attention(A * K, A + 1.0, A * A, is_causal=True) \
         + scaled_dot_product_attention(A, A * K, A, attn_mask=K[:, :2] > 0.0)",
    ),
    (
        "GroupNorm",
        "_group_norm((A * K).reshape(1, 3, 2), 3, A[0], A[1], 1e-5)",
    ),
    // the fused recurrences: IR ops lstm_layer / gru_layer, gradient kernels per input
    (
        "LstmLayer",
        "_lstm_layer(cat([A * K, A], 1).view(3, 1, 4), A[0, :1].view(1, 1), \
         A[1, :1].view(1, 1), A.view(6, 1)[:4])",
    ),
    (
        "GruLayer",
        "_gru_layer((A * K).view(2, 1, 3), A[0, :1].view(1, 1), A[1].view(3, 1), A[0])",
    ),
    // the torch.linalg matrix functions (tensor/linalg_ops.rs): inv, logdet (slogdet),
    // det and pinv, each a graph op in the forward and its rule's ops in the backward
    (
        "Linalg",
        "(A @ A.T + eye(2)).inverse() @ A * (A @ A.T + eye(2)).det() + A.pinverse().T * (A @ A.T + eye(2)).logdet()",
    ),
];

/// Backward nodes a captured step cannot record yet (the step runs eagerly), each
/// with the reason. The compiled-function, loop and `if` nodes are captured regions
/// themselves (a compiled call inside a capture is inlined).
const NOT_CAPTURED: &[(&str, &str)] = &[
    ("AsStrided", "a view read after an in-place op on its base"),
    (
        "CopySlices",
        "an in-place op on a view of a tensor requiring grad",
    ),
    ("IndexPut", "`x[i] = v` on a tensor requiring grad"),
    ("Compiled", "a compiled function's node"),
    ("CompiledOut", "a compiled function's node"),
    ("Loop", "a captured loop's node"),
    ("LoopOut", "a captured loop's node"),
    ("Branch", "a captured tensor `if`'s node"),
    ("BranchOut", "a captured tensor `if`'s node"),
];

/// Checks that a step running `expr`'s backward (into the leaf A, from a loss that
/// squares it) compiles once with no break, and that its gradient equals eager's.
fn check_step_captured(expr: &str) {
    let src = format!(
        "A = tensor({VALS}, requires_grad=True)\nI = tensor([2, 0])\n\
         K = tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])\n\
         X4 = arange(30.0).view(1, 1, 5, 6) / 30.0\n\
         def step(s):\n    A.grad = None\n    y = {expr}\n    (y * y * s).sum().backward()\n    return A.grad * 1.0\n\
         f = compile(step)\n"
    );
    let mut e = eager_engine("");
    e.set_compile(true);
    if let Err(err) = e.run_source(&src, "t.dl") {
        panic!("{expr}: {}", e.render_error(&err));
    }
    let why = text(&mut e, "explain(f, tensor(1.0))");
    assert_eq!(why, "captured: no graph breaks", "{expr}");
    let run = |e: &mut Engine, call: &str| floats(&text(e, &format!("str({call}.tolist())")));
    let compiled = run(&mut e, "f(tensor(1.0))");
    let again = run(&mut e, "f(tensor(1.0))");
    let eager = run(&mut e, "step(tensor(1.0))");
    assert_eq!(eager.len(), 6, "{expr}");
    for (c, x) in compiled.iter().chain(&again).zip(eager.iter().cycle()) {
        assert!(
            (c - x).abs() <= 1e-5 * x.abs().max(1.0),
            "{expr}: {compiled:?} vs {eager:?}"
        );
    }
    let stats: Vec<i64> = ["captures", "fallbacks"]
        .iter()
        .map(|k| {
            text(&mut e, &format!("str(compile_stats(f)['{k}'])"))
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(stats, [1, 0], "{expr}: captures, fallbacks");
}

#[test]
fn every_differentiable_unary_op_backward_is_captured() {
    for &op in UnaryOp::ALL.iter().filter(|op| op.differentiable()) {
        check_step_captured(&unary_expr(op));
    }
}

/// Every kind of backward node (read from the exhaustive matches of src/autograd/
/// names.rs: the `IrOp` variants `op_name` names, up to the ops eager code records no
/// node for, and the `BackwardOp` variants other than `Op`) is in BACKWARD_EXPRS or
/// NOT_CAPTURED; each of the first compiles with no break.
#[test]
fn every_backward_node_is_captured() {
    let names_rs = include_str!("../src/autograd/names.rs");
    let variants = |text: &'static str, prefix: &str| -> Vec<&'static str> {
        text.split(prefix)
            .skip(1)
            .filter_map(|rest| {
                let end = rest.find(|c: char| !c.is_ascii_alphanumeric())?;
                Some(&rest[..end])
            })
            .filter(|n| !n.is_empty() && *n != "Op")
            .collect()
    };
    let start = names_rs.find("fn op_name(").unwrap();
    let end = names_rs
        .find("// ops eager code records no node for")
        .unwrap();
    let mut names = variants(&names_rs[start..end], "O::");
    names.extend(variants(names_rs, "BackwardOp::"));
    assert!(names.len() >= 30, "{names:?}");
    for n in &names {
        let known = BACKWARD_EXPRS
            .iter()
            .chain(NOT_CAPTURED)
            .any(|(m, _)| m == n);
        assert!(
            known,
            "backward node {n}: add its expression to BACKWARD_EXPRS"
        );
    }
    for (_, expr) in BACKWARD_EXPRS {
        check_step_captured(expr);
    }
}

/// Every row of the binary table against PyTorch: tests/refs/binary_rows.py prints each
/// op (as the torch function of its `name()`) on float32 and int64 operands, and on
/// bool operands for comparisons and logical ops (torch computes bool arithmetic in
/// bool, Kiln in int64 as Python's `True + True == 2`, so those lines are not compared).
/// Float results agree to 1 ulp (signed zeros and NaNs exactly), the rest exactly.
#[test]
fn binary_rows_match_pytorch() {
    use kiln::ops::BinaryOp;
    use kiln::tensor::creation::{from_bool, from_i64};
    let truth = include_str!("refs/binary_rows.out");
    let fa = from_f32(vec![0.7, -1.3, 2.5, -0.0, 3.0], &[5]).unwrap();
    let fb = from_f32(vec![1.9, 0.6, -0.8, 2.0, 3.0], &[5]).unwrap();
    let ia = from_i64(vec![7, -7, 5, 0, -3], &[5]).unwrap();
    let ib = from_i64(vec![2, 3, 1, 4, 3], &[5]).unwrap();
    let ba = from_bool(vec![true, true, false, false], &[4]).unwrap();
    let bb = from_bool(vec![true, false, true, false], &[4]).unwrap();
    for &op in BinaryOp::ALL {
        let mut seen = 0;
        for line in truth
            .lines()
            .filter(|l| l.split(' ').next() == Some(op.name()))
        {
            let w: Vec<&str> = line.split(' ').collect();
            let (a, b) = match w[1] {
                "f32" => (&fa, &fb),
                "i64" => (&ia, &ib),
                _ if op.is_comparison() || op.is_logical() => (&ba, &bb),
                _ => continue,
            };
            seen += 1;
            let got = ops::binary(op, a, b);
            if w[2] == "error" {
                assert!(got.is_err(), "{line}: Kiln computes it");
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("{line}: {}", e.message));
            assert_eq!(got.dtype().name(), w[2], "{line}");
            let vals = f32s(&got);
            assert_eq!(vals.len(), w.len() - 3, "{line}");
            for (g, want) in vals.iter().zip(&w[3..]) {
                let want: f64 = want.parse().unwrap_or(f64::NAN);
                let want = want as f32;
                let ulps = (g.to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(
                    ulps <= 1 || (g.is_nan() && want.is_nan()),
                    "{line}: Kiln {vals:?}"
                );
            }
        }
        assert!(
            seen >= 2,
            "{op:?}: no PyTorch truth lines in refs/binary_rows.out"
        );
    }
}

/// The exact GELU's float32 kernels against PyTorch (tests/refs/gelu_rows.py: gelu and
/// its gradient, dy = 1, over 256 values through PyTorch's vectorized loop). Both use the
/// same erf formula, rounded differently (PyTorch fuses multiply-adds), and `1 + erf(x)`
/// cancels for negative x: the bound is 2 ulp of 1.0 in `erf`, scaled as gelu scales it
/// (`|x| / 2` in the value, `1/2` in the gradient's cdf), plus one ulp of the result.
#[test]
fn gelu_rows_match_pytorch() {
    let rows: Vec<[f32; 3]> = include_str!("refs/gelu_rows.out")
        .lines()
        .map(|l| {
            let v: Vec<f32> = l.split(' ').map(|w| w.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    assert_eq!(rows.len(), 256);
    let xs: Vec<f32> = rows.iter().map(|r| r[0]).collect();
    let x = from_f32(xs, &[256]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = ops::unary(UnaryOp::Gelu, &x).unwrap();
    backward(&y.sum(&[], false).unwrap(), None, false).unwrap();
    let (vals, grads) = (f32s(&y), f32s(&x.grad().expect("a gradient")));
    let ulp = |v: f32| f64::from(f32::from_bits(v.abs().to_bits() + 1) - v.abs());
    let erf_ulps = 2.0 * f64::from(f32::EPSILON);
    for ((r, &v), &g) in rows.iter().zip(&vals).zip(&grads) {
        let (x0, want_v, want_g) = (f64::from(r[0]), r[1], r[2]);
        let tol_v = erf_ulps * x0.abs() / 2.0 + ulp(want_v);
        assert!(
            (f64::from(v) - f64::from(want_v)).abs() <= tol_v,
            "gelu({x0}) = {v}, PyTorch {want_v}"
        );
        let tol_g = erf_ulps / 2.0 + ulp(want_g) + 2.0 * ulp(1.0) * x0.abs() * 0.4;
        assert!(
            (f64::from(g) - f64::from(want_g)).abs() <= tol_g,
            "gelu'({x0}) = {g}, PyTorch {want_g}"
        );
    }
}
