//! `for` loops captured as IR loops: the RNN forward of benches/w7_rnn.dl runs twenty
//! lengths with one compiled version, the IR of a captured loop (snapshot), and a
//! runtime index out of range raising eager's IndexError (the compiled run fails, the
//! call reruns eagerly).

mod common;

use common::{engine, snapshot, stats, text};

const RNN: &str = include_str!("fixtures/rnn_twenty.dl");

#[test]
fn rnn_forward_compiles_once_for_twenty_lengths() {
    let src = RNN.replacen(
        "ok = True",
        "f = compile(seq_loss, dynamic=True)\nok = True",
        1,
    );
    let mut e = engine(&src);
    assert_eq!(text(&mut e, "str(ok)"), "True");
    assert_eq!(stats(&mut e, "f"), [1, 19, 0, 1]);
}

#[test]
fn rnn_forward_recompiles_once_with_the_length_symbolic() {
    let src = RNN.replacen("ok = True", "f = compile(seq_loss)\nok = True", 1);
    let mut e = engine(&src);
    assert_eq!(text(&mut e, "str(ok)"), "True");
    assert_eq!(stats(&mut e, "f"), [2, 18, 0, 2]);
    let g = text(&mut e, "graph(f, randn(9, D), 3, *params)");
    assert!(
        g.contains("f32[s0, 8]") && g.contains("trip=dim(arg 1, 0)"),
        "{g}"
    );
}

#[test]
fn captured_for_loop_ir() {
    let mut e = engine(
        "W = ones(3, 2)\n\
         @compile(dynamic=True)\n\
         def f(x, y):\n\
         \x20   h = zeros(2)\n\
         \x20   c = zeros(2)\n\
         \x20   for t in range(1, x.shape[0], 2):\n\
         \x20       h = tanh(x[t] @ W + h)\n\
         \x20       c = c + h * y[t]\n\
         \x20   return h, c\n",
    );
    snapshot(
        "for_range",
        &text(&mut e, "graph(f, ones(5, 3), ones(5, 2))"),
    );
}

#[test]
fn runtime_index_out_of_range_raises_eagers_index_error() {
    let mut e = engine(
        "def g(x, y):\n\
         \x20   h = zeros(3)\n\
         \x20   for t in range(x.shape[0]):\n\
         \x20       h = h + y[t]\n\
         \x20   return h\n\
         \n\
         f = compile(g, dynamic=True)\n\
         \n\
         def msg(fn):\n\
         \x20   try:\n\
         \x20       fn(ones(6, 3), ones(5, 3))\n\
         \x20   except IndexError as e:\n\
         \x20       return str(e)\n\
         \x20   return 'no error'\n\
         \n\
         a = f(ones(4, 3), ones(4, 3))\n\
         compiled = msg(f)\n\
         plain = msg(g)\n",
    );
    let compiled = text(&mut e, "compiled");
    assert_eq!(compiled, text(&mut e, "plain"));
    assert_eq!(
        compiled,
        "index 5 is out of bounds for dimension 0 with size 5"
    );
    // The one capture ran (a hit) and failed at the runtime index: one fallback.
    assert_eq!(stats(&mut e, "f"), [1, 0, 1, 1]);
}
