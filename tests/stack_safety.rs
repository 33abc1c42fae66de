//! Deep data never overflows the native stack: each case runs in an `Engine` on a
//! thread with a 2 MB stack (the default size of a spawned Rust thread), and both the
//! run and the engine's drop must come back. Recursive algorithms on nested data
//! (comparison, hash, repr) raise `RecursionError`; freeing a long chain (autograd
//! graph, iterator pipeline, nested containers) is iterative.

use kiln::{Engine, ErrorKind};

/// Runs `src` in a fresh engine on a 2 MB thread; returns the error kind (if any) and
/// the printed output, after dropping the engine on that same thread.
fn run_small_stack(src: &'static str) -> (Option<ErrorKind>, String) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let out = std::rc::Rc::new(std::cell::RefCell::new(String::new()));
            let sink = out.clone();
            let mut e = Engine::new();
            e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
            let r = e.run_source(src, "<stack>").err().map(|e| e.kind);
            drop(e);
            let s = out.borrow().clone();
            (r, s)
        })
        .expect("spawn")
        .join()
        .expect("the engine thread must not die")
}

#[test]
fn long_autograd_chain_drops_iteratively() {
    let (r, out) = run_small_stack(
        "w = ones(3, requires_grad=True)\ntotal = zeros(())\n\
         for i in range(100000):\n    total = total + (w * w).sum()\nprint(total.item())",
    );
    assert_eq!(r, None);
    assert_eq!(out.trim(), "300000.0");
}

/// A node whose output the next node saves (`sin` saves its input) is still pointed at
/// weakly while it is freed; one whose output nothing saves (`* 0.5`) is not. A chain
/// alternating them frees through both paths of `Node::drop`.
#[test]
fn long_chain_of_output_saving_nodes_drops_iteratively() {
    let (r, out) = run_small_stack(
        "x = ones(2, requires_grad=True)\ny = x\n\
         for i in range(100000):\n    y = (y.sin() * 0.5).exp()\nprint(y.detach().sum().item() > 0)",
    );
    assert_eq!(r, None);
    assert_eq!(out.trim(), "True");
}

#[test]
fn long_view_chain_with_grad_drops_iteratively() {
    let (r, out) = run_small_stack(
        "x = ones(2, requires_grad=True)\ny = x\nfor i in range(1000000):\n    y = y.view(2)\n\
         print(y.shape)",
    );
    assert_eq!(r, None);
    assert_eq!(out.trim(), "torch.Size([2])");
}

#[test]
fn long_iterator_chains_drop_iteratively() {
    for src in [
        "it = [1, 2]\nfor i in range(1000000):\n    it = map(abs, it)\nprint('ok')",
        "it = [1, 2]\nfor i in range(1000000):\n    it = zip(it)\nprint('ok')",
        "it = [1, 2]\nfor i in range(1000000):\n    it = enumerate(it)\nprint('ok')",
    ] {
        let (r, out) = run_small_stack(src);
        assert_eq!(r, None, "{src}");
        assert_eq!(out.trim(), "ok", "{src}");
    }
}

#[test]
fn deep_nesting_raises_recursion_error() {
    for src in [
        // comparisons of nested lists (200k deep: 100 times the recursion limit)
        "a = []\nb = []\nfor i in range(200000):\n    a = [a]\n    b = [b]\nprint(a == b)",
        "a = []\nb = []\nfor i in range(200000):\n    a = [a]\n    b = [b]\nprint(a < b)",
        // hash of nested tuples
        "a = ()\nfor i in range(1000000):\n    a = (a,)\nprint(hash(a))",
        // repr and str of nested lists and dicts
        "a = []\nfor i in range(200000):\n    a = [a]\nprint(repr(a))",
        "a = []\nfor i in range(200000):\n    a = [a]\nprint(str(a))",
        "a = {}\nfor i in range(200000):\n    a = {1: a}\nprint(a)",
        // nested tuples as dict keys and in `in`
        "a = ()\nfor i in range(1000000):\n    a = (a,)\nd = {a: 1}",
        "a = ()\nfor i in range(1000000):\n    a = (a,)\nprint(a in set([1]))",
    ] {
        let (r, _) = run_small_stack(src);
        assert_eq!(r, Some(ErrorKind::RecursionError), "{src}");
    }
}

#[test]
fn deep_containers_drop_iteratively() {
    let (r, out) = run_small_stack(
        "a = []\nd = {}\nt = ()\nfor i in range(300000):\n    a = [a]\n    d = {0: d}\n    t = (t, i)\n\
         print('built')",
    );
    assert_eq!(r, None);
    assert_eq!(out.trim(), "built");
}
