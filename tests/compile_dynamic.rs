//! Symbolic shapes of `@compile`: `dynamic=True` and automatic dynamic recompiles run
//! variable sizes with one version (counted through `compile_stats`; the
//! `KILN_LOG=compile` lines of the binary are counted in repl/tests/compile_log.rs),
//! guards on symbolic relations (a broken
//! tie or a size-1 broadcast recompiles; mismatched shapes raise eager's error), Python
//! reads of sizes specialise instead of baking wrong values, and dumps show `s0`.

mod common;

use common::{engine, rendered_error, stats, text};

/// Twenty lengths 5..=43 through `f`, results checked against the uncompiled `g`
/// (shared with repl/tests/compile_log.rs).
const TWENTY: &str = include_str!("fixtures/twenty_lengths.dl");

#[test]
fn dynamic_true_compiles_once_for_twenty_lengths() {
    let src = TWENTY.replacen("ok = True", "f = compile(g, dynamic=True)\nok = True", 1);
    let mut e = engine(&src);
    assert_eq!(stats(&mut e, "f"), [1, 19, 0, 1]);
    assert_eq!(text(&mut e, "str(ok)"), "True");
}

#[test]
fn second_size_recompiles_once_with_the_dim_symbolic() {
    let src = TWENTY.replacen("ok = True", "f = compile(g)\nok = True", 1);
    let mut e = engine(&src);
    assert_eq!(stats(&mut e, "f"), [2, 18, 0, 2]);
    assert_eq!(text(&mut e, "str(ok)"), "True");
    let g = text(&mut e, "graph(f, randn(11, 4))");
    assert!(
        g.contains("f32[s0, 4]") && g.contains("f32[s0-1, 6]"),
        "{g}"
    );
}

#[test]
fn tied_dims_stay_tied_and_size_one_recompiles() {
    let mut e = engine(
        "@compile(dynamic=True)\ndef f(x, y):\n    return (x + y) * 2\n\n\
         a = f(ones(5), ones(5))\nb = f(ones(9), ones(9))\nc = f(ones(6), ones(1))\n\
         d = f(ones(1), ones(6))\n",
    );
    // (5,5) and (9,9) share the version with one symbol; y of size 1 broadcasts (a new
    // version), and x of size 1 another.
    assert_eq!(stats(&mut e, "f"), [3, 1, 0, 3]);
    assert_eq!(
        text(&mut e, "str(b.tolist())"),
        format!("{:?}", vec![4.0; 9])
    );
    assert_eq!(
        text(&mut e, "str(c.tolist())"),
        format!("{:?}", vec![4.0; 6])
    );
    assert_eq!(
        text(&mut e, "str(d.tolist())"),
        format!("{:?}", vec![4.0; 6])
    );
    let g = text(&mut e, "graph(f, ones(7), ones(7))");
    assert!(
        g.contains("input(arg0) : f32[s0]") && g.contains("input(arg1) : f32[s0]"),
        "{g}"
    );
}

#[test]
fn broken_tie_raises_eagers_error() {
    let src = "@compile(dynamic=True)\ndef f(x, w):\n    return x @ w\n\n\
               f(ones(3, 4), ones(4, 2))\nf(ones(5, 6), ones(6, 2))\nf(ones(5, 6), ones(7, 2))\n";
    let eager = rendered_error(src, false);
    let compiled = rendered_error(src, true);
    assert!(
        eager.contains("matmul") && eager.contains("t.dl:3"),
        "{eager}"
    );
    assert_eq!(compiled, eager);
}

#[test]
fn loop_body_follows_the_batch_and_a_broken_tie_raises_eagers_error() {
    // The body's tensors carry the batch: one symbolic version serves batches 4..=7;
    // x's batch and m's are tied inside the body, so a call breaking the tie recaptures
    // and raises eager's broadcast error from the body's line.
    let def = "@compile\ndef f(x, m):\n    h = zeros(x.shape[0], 3)\n    \
               for t in range(x.shape[1]):\n        h = h + x[:, t] * m\n    return h\n\n";
    let calls: String = (3..8)
        .map(|b| format!("r{b} = f(ones({b}, 9, 3), ones({b}, 1) * {b}.0)\n"))
        .collect();
    let mut e = engine(&format!("{def}{calls}"));
    assert_eq!(stats(&mut e, "f"), [2, 3, 0, 2]);
    assert_eq!(
        text(&mut e, "str(r7.tolist()[6])"),
        format!("{:?}", vec![63.0; 3])
    );
    let src = format!("{def}{calls}f(ones(6, 9, 3), ones(4, 1))\n");
    let eager = rendered_error(&src, false);
    let compiled = rendered_error(&src, true);
    assert!(eager.contains("t.dl:5"), "{eager}");
    assert_eq!(compiled, eager);
}

#[test]
fn python_size_reads_specialise_instead_of_baking() {
    // x.shape[0] used as a dict key is a Python-level decision: each size is its own
    // version, never a stale one (zeros_like(x) itself follows the symbolic size).
    let mut e = engine(
        "@compile(dynamic=True)\ndef f(x):\n    \
         return x * {3: 1.0, 4: 2.0, 5: 3.0}[x.shape[0]] + zeros_like(x)\n\n\
         out = [f(ones(n)).sum().item() for n in [3, 4, 3, 5]]\n",
    );
    assert_eq!(text(&mut e, "str(out)"), "[3.0, 8.0, 3.0, 15.0]");
    assert_eq!(stats(&mut e, "f"), [3, 1, 0, 3]);
}

#[test]
fn ambiguous_reshape_specialises_and_matches_eager() {
    // view(4, -1) of [n, 4] is [4, n]. Recompiled symbolically at n=6, the reshape [6, 4]
    // -> [4, 6] splits 4*n into (4, n): only the 4 divides 4*n, so n stays symbolic (one
    // symbolic version serves n=8).
    let src = |sizes: [usize; 3]| {
        let calls: Vec<String> = sizes
            .iter()
            .zip(["a", "b", "c"])
            .map(|(n, v)| format!("{v} = f(arange({}.0).reshape({n}, 4))\n", n * 4))
            .collect();
        format!(
            "@compile\ndef f(x):\n    return x.view(4, -1) * 1.5\n\n{}",
            calls.concat()
        )
    };
    let mut e = engine(&src([4, 6, 8]));
    assert_eq!(text(&mut e, "str(c.shape)"), "torch.Size([4, 8])");
    assert_eq!(
        text(&mut e, "str(b.tolist()[1])"),
        "[9.0, 10.5, 12.0, 13.5, 15.0, 16.5]"
    );
    assert_eq!(stats(&mut e, "f"), [2, 1, 0, 2]);
    // Recompiled symbolically at n=4, [4, 4] -> [4, 4] could be [n, 4] or [4, n]: n is
    // specialised (that version serves n=4 only; n=8 recompiles).
    let mut e = engine(&src([6, 4, 8]));
    assert_eq!(text(&mut e, "str(c.shape)"), "torch.Size([4, 8])");
    assert_eq!(text(&mut e, "str(b.tolist()[1])"), "[6.0, 7.5, 9.0, 10.5]");
    assert_eq!(stats(&mut e, "f"), [3, 0, 0, 3]);
}

#[test]
fn symbolic_flatten_and_fused_kernels_take_runtime_sizes() {
    let mut e = engine(
        "@compile\ndef f(x):\n    y = (x * 2.0 + 1.0).relu()\n    return y.flatten(), y.sum(1)\n\n\
         r = [f(ones(n, 3)) for n in [2, 5, 9]]\n",
    );
    // Static at n=2, symbolic in dim 0 from n=5 (with dynamic=True dim 1 would be
    // symbolic too, and flatten's s0*s1 is not affine: specialised).
    assert_eq!(stats(&mut e, "f"), [2, 1, 0, 2]);
    assert_eq!(text(&mut e, "str(r[2][0].shape)"), "torch.Size([27])");
    assert_eq!(
        text(&mut e, "str(r[1][1].tolist())"),
        format!("{:?}", vec![9.0; 5])
    );
    let g = text(&mut e, "graph(f, ones(4, 3))");
    assert!(
        g.contains("shape=[3*s0]") && g.contains("fused kernel"),
        "{g}"
    );
}
