//! Tensors through the Engine: hostile inputs give the right exception kind (never a
//! panic or a stack overflow), and errors carry the span of the failing expression.

use kiln::error::ErrorKind;
use kiln::Engine;

fn run(src: &str) -> kiln::error::Result<kiln::Value> {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e.run_source(src, "<test>")
}

fn kind_of(src: &str) -> ErrorKind {
    match run(src) {
        Ok(_) => panic!("expected an error from {src:?}"),
        Err(e) => e.kind,
    }
}

#[test]
fn hostile_tensor_inputs_raise_errors() {
    let cases: &[(&str, ErrorKind)] = &[
        ("a = []\na.append(a)\ntensor(a)", ErrorKind::ValueError),
        (
            "x = 1.0\nfor _ in range(200):\n    x = [x]\ntensor(x)",
            ErrorKind::ValueError,
        ),
        ("zeros(1 << 40, 1 << 30)", ErrorKind::MemoryError),
        ("zeros(100000, 100000, 100000)", ErrorKind::MemoryError),
        ("zeros(2)[3]", ErrorKind::IndexError),
        ("zeros(2)[1, 1]", ErrorKind::IndexError),
        ("zeros(2)[tensor([5])]", ErrorKind::IndexError),
        ("zeros(2)[tensor([True])]", ErrorKind::IndexError),
        ("zeros(2)['a']", ErrorKind::IndexError),
        ("zeros(2)[::0]", ErrorKind::ValueError),
        ("x = zeros(2)\nx[0] = 'a'", ErrorKind::TypeError),
        ("zeros(3) @ zeros(4)", ErrorKind::ShapeError),
        ("randint(5, 2, (3,))", ErrorKind::RuntimeError),
        ("arange(0, 10, 0)", ErrorKind::RuntimeError),
        ("tensor([1]) // 0", ErrorKind::RuntimeError),
        ("tensor([1]) % 0", ErrorKind::RuntimeError),
        ("zeros(3).uniform_(2, 1)", ErrorKind::RuntimeError),
        (
            "tensor([[1, 2]]).gather(1, tensor([[5]]))",
            ErrorKind::RuntimeError,
        ),
        ("max_pool2d(zeros(1, 1, 2, 2), 3)", ErrorKind::ShapeError),
        (
            "conv2d(zeros(1, 2, 4, 4), zeros(1, 3, 2, 2))",
            ErrorKind::ShapeError,
        ),
        ("(zeros(2) * 2).backward()", ErrorKind::RuntimeError),
        ("grad(lambda t: t)(zeros(2))", ErrorKind::RuntimeError),
        ("grad(lambda t: 1)(zeros(1))", ErrorKind::TypeError),
        ("with no_grad():\n    zeros(2) + None", ErrorKind::TypeError),
    ];
    for (src, want) in cases {
        assert_eq!(kind_of(src), *want, "{src}");
    }
}

#[test]
fn no_grad_is_restored_after_an_exception() {
    let src = "try:\n    with no_grad():\n        1 / 0\nexcept ZeroDivisionError:\n    pass\n\
               assert is_grad_enabled()\nx = ones(1, requires_grad=True)\nassert (x * 2).requires_grad";
    assert!(run(src).is_ok());
}

#[test]
fn operator_errors_point_at_the_expression() {
    let src = "a = zeros(3, 4)\nb = zeros(5, 2)\nc = 1\nd = a @ b\n";
    let err = run(src).expect_err("matmul of mismatched shapes fails");
    assert_eq!(err.kind, ErrorKind::ShapeError);
    assert_eq!(
        err.message,
        "matmul: (3, 4) @ (5, 2): inner dimensions 4 and 5 differ"
    );
    let span = err.span.expect("the error has a span");
    assert_eq!(&src[span.start as usize..span.end as usize], "a @ b");
}

#[test]
fn method_errors_point_at_the_call() {
    let src = "x = zeros(2, 3)\ny = x.reshape(4, 4)\n";
    let err = run(src).expect_err("bad reshape fails");
    assert_eq!(err.kind, ErrorKind::ShapeError);
    let span = err.span.expect("the error has a span");
    assert_eq!(
        &src[span.start as usize..span.end as usize],
        "x.reshape(4, 4)"
    );
}

#[test]
fn script_results_match_hand_computed_values() {
    let src = "x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)\n\
               y = (x @ x).sum()\ny.backward()\nx.grad.tolist()";
    // (1 X^T)_ij = row sum j of X = (3, 7); (X^T 1)_ij = column sum i = (4, 6)
    let v = run(src).expect("runs");
    let mut e = Engine::new();
    let want = e.eval("[[7.0, 11.0], [9.0, 13.0]]").expect("literal");
    assert_eq!(format!("{v:?}"), format!("{want:?}"));
}
