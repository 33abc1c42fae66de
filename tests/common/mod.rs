//! Helpers shared by the `@compile` integration tests: engines with compilation on,
//! typed evaluation that panics with the rendered Kiln error, and `compile_stats`.
#![allow(dead_code)] // each test binary uses its own subset

use kiln::compile::capture::cache::{EntryKind, GraphEntry};
use kiln::{Engine, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// An engine (compilation on, output discarded) that ran `src`.
pub fn engine(src: &str) -> Engine {
    let mut e = Engine::new();
    e.set_compile(true);
    e.set_output(Box::new(|_| {}));
    if let Err(err) = e.run_source(src, "t.dl") {
        panic!("{}", e.render_error(&err));
    }
    e
}

/// Runs `f` on the last compiled version of the compiled global `name` (panics when
/// there is none).
pub fn with_last_graph<T>(e: &Engine, name: &str, f: impl FnOnce(&GraphEntry) -> T) -> T {
    let v = e.get_global(name);
    let Some(Value::Compiled(cf)) = &v else {
        panic!("{name} is not a compiled function");
    };
    let c = cf.cache.borrow();
    match c.entries.iter().map(|x| &x.kind).next_back() {
        Some(EntryKind::Graph(g)) => f(g),
        _ => panic!("{name} has no compiled graph"),
    }
}

/// Runs `src` (or, with `path`, that file) with compilation on or off; returns the
/// engine and everything it printed, a rendered error included.
pub fn run_captured(
    src: Option<&str>,
    path: Option<&std::path::Path>,
    compile: bool,
) -> (Engine, String) {
    run_captured_with(src, path, |e| e.set_compile(compile))
}

/// [`run_captured`] with the engine set up by `setup` (compilation, the eager check).
pub fn run_captured_with(
    src: Option<&str>,
    path: Option<&std::path::Path>,
    setup: impl FnOnce(&mut Engine),
) -> (Engine, String) {
    let buf = Rc::new(RefCell::new(String::new()));
    let sink = buf.clone();
    let mut e = Engine::new();
    setup(&mut e);
    e.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    let r = match (path, src) {
        (Some(p), _) => e.run_file(p).map(|_| ()),
        (None, s) => e.run_source(s.unwrap_or(""), "t.dl").map(|_| ()),
    };
    if let Err(err) = r {
        let msg = e.render_error(&err);
        buf.borrow_mut().push_str(&msg);
    }
    let out = buf.borrow().clone();
    (e, out)
}

/// The error `src` raises, rendered as the engine shows it (empty when it runs through),
/// with `@compile` on or off.
pub fn rendered_error(src: &str, compile: bool) -> String {
    let mut e = Engine::new();
    e.set_compile(compile);
    e.set_output(Box::new(|_| {}));
    match e.run_source(src, "t.dl") {
        Ok(_) => String::new(),
        Err(err) => e.render_error(&err),
    }
}

pub fn int(e: &mut Engine, expr: &str) -> i64 {
    match e.eval_as::<i64>(expr) {
        Ok(v) => v,
        Err(err) => panic!("{expr}: {}", e.render_error(&err)),
    }
}

pub fn text(e: &mut Engine, expr: &str) -> String {
    match e.eval_as::<String>(expr) {
        Ok(v) => v,
        Err(err) => panic!("{expr}: {}", e.render_error(&err)),
    }
}

/// (captures, hits, fallbacks, versions) of compiled global `f`.
pub fn stats(e: &mut Engine, f: &str) -> [i64; 4] {
    ["captures", "hits", "fallbacks", "versions"]
        .map(|k| int(e, &format!("compile_stats({f})['{k}']")))
}

/// Compares `actual` with tests/compile/snapshots/NAME.ir (`KILN_BLESS=1` rewrites it).
pub fn snapshot(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/compile/snapshots/{name}.ir"));
    if std::env::var("KILN_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, actual).ok();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(want, actual, "snapshot {name} (bless with KILN_BLESS=1)");
}

/// The floats of a printed (nested) list.
pub fn floats(s: &str) -> Vec<f64> {
    s.split([',', '[', ']'])
        .filter_map(|t| t.trim().parse::<f64>().ok())
        .collect()
}

/// `name.grad` flattened, as floats.
pub fn grad_of(e: &mut Engine, name: &str) -> Vec<f64> {
    floats(&text(e, &format!("str({name}.grad.reshape(-1).tolist())")))
}

/// An engine with compilation off (output discarded) that ran `src`.
pub fn eager_engine(src: &str) -> Engine {
    let mut e = Engine::new();
    e.set_compile(false);
    e.set_output(Box::new(|_| {}));
    if let Err(err) = e.run_source(src, "t.dl") {
        panic!("{}", e.render_error(&err));
    }
    e
}

/// `a` and `b` agree within 1e-5 relative (plus 1e-7 absolute).
pub fn assert_close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= 1e-5 * x.abs().max(y.abs()) + 1e-7,
            "{what}: {x} vs {y}"
        );
    }
}

/// `a` and `b` agree within `tol` absolute, element by element.
pub fn assert_within(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}[{i}]: got {g}, want {w}");
    }
}

/// The central differences (eps 1e-2) of the script's `loss()` in the first `n` elements
/// of leaf `p` (needs FD_PRELUDE).
pub fn fd_grads(e: &mut Engine, p: &str, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let expr = format!("str(fd_at({p}.reshape(-1), {i}, 1e-2, loss))");
            floats(&text(e, &expr))[0]
        })
        .collect()
}

/// `fd_at(p, ix, eps, loss)`: the central difference of `loss()` in element `ix` of leaf
/// `p` (an in-place nudge under no_grad, restored after).
pub const FD_PRELUDE: &str = "
def fd_at(p, ix, eps, loss):
    with no_grad():
        old = p[ix].item()
        p[ix] = old + eps
        lp = loss().item()
        p[ix] = old - eps
        lm = loss().item()
        p[ix] = old
    return (lp - lm) / (2 * eps)
";
