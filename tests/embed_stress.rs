//! Thousands of random scripts through one limited engine: no panic, the engine stays
//! usable, and resident memory stays flat (measured from /proc/self/statm).

use kiln::{Engine, ErrorKind, Limits};
use std::time::Duration;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// No atom is a container the statements store into (`xs`, `d`), so no script builds a
/// reference cycle (Kiln frees memory by reference counting; cycles are not collected).
const ATOMS: &[&str] = &[
    "0",
    "1",
    "-3",
    "2.5",
    "1e308",
    "x",
    "y",
    "s",
    "None",
    "True",
    "'ab'",
    "[1, 2]",
    "(1,)",
    "{}",
    "len(xs)",
    "f(x)",
    "g(3)",
    "p.v",
    "undefined_name",
];
const OPS: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "**", "==", "<", "and", "or", "in",
];

fn expr(r: &mut Rng, depth: u32) -> String {
    if depth == 0 || r.below(3) == 0 {
        return r.pick(ATOMS).to_string();
    }
    match r.below(5) {
        0 => format!(
            "({} {} {})",
            expr(r, depth - 1),
            r.pick(OPS),
            expr(r, depth - 1)
        ),
        1 => format!("[{} for i in range({})]", expr(r, depth - 1), r.below(50)),
        2 => format!("str({})", expr(r, depth - 1)),
        3 => format!("xs[{}]", expr(r, depth - 1)),
        _ => format!("not {}", expr(r, depth - 1)),
    }
}

fn statement(r: &mut Rng) -> String {
    let e = expr(r, 3);
    match r.below(12) {
        0 => format!("x = {e}"),
        1 => format!("y = {e}"),
        2 => format!("xs.append({e})"),
        3 => format!("d[{}] = {e}", r.below(10)),
        4 => format!("s = s + str({e})[:5]"),
        5 => format!("for i in range({}):\n    x = {e}", r.below(30)),
        6 => format!("while x:\n    x = {e}"),
        7 => format!("try:\n    y = {e}\nexcept Exception as ex:\n    y = str(ex)"),
        8 => format!("def h(a):\n    return h(a) if a else {e}\nh(x)"),
        9 => format!("print({e})"),
        10 => format!("p.v = {e}"),
        _ => format!("{e} {}", r.pick(&["(", ")", ":", "=", "def"])),
    }
}

const PRELUDE: &str = "x = 1\ny = 2\nxs = [1, 2, 3]\nd = {}\ns = ''\n\
def f(a):\n    return a\ndef g(n):\n    return n * 2\n\
class P:\n    v = 0\np = P()\n";

fn script(r: &mut Rng) -> String {
    let n = 1 + r.below(6);
    let body: Vec<String> = (0..n).map(|_| statement(r)).collect();
    // Reset the state the statements grow (lists, strings), so repeating scripts does not
    // legitimately accumulate data.
    format!("xs = [1, 2, 3]\nd = {{}}\ns = ''\n{}\n", body.join("\n"))
}

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn limited_engine() -> Engine {
    let mut e = Engine::with_limits(Limits {
        max_operations: Some(20_000),
        max_call_depth: 60,
        max_tensor_bytes: Some(1 << 20),
        max_total_tensor_bytes: Some(8 << 20),
        max_memory: None,
        wall_time: Some(Duration::from_secs(2)),
        max_container_len: 100_000,
    });
    e.set_sandbox(true);
    e.set_output(Box::new(|_| {}));
    e.eval(PRELUDE).unwrap();
    e
}

#[test]
fn thousands_of_random_scripts_without_panic_or_leak() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let pool: Vec<String> = (0..400).map(|_| script(&mut r)).collect();
    let mut e = limited_engine();
    let (mut ok, mut failed, mut limited) = (0, 0, 0);
    let mut run_round = |e: &mut Engine| {
        for src in &pool {
            match e.eval(src) {
                Ok(_) => ok += 1,
                Err(err) => {
                    failed += 1;
                    if err.kind == ErrorKind::LimitExceeded {
                        limited += 1;
                    }
                    // Rendering must not panic either.
                    let _ = e.render_error(&err);
                }
            }
        }
    };
    for _ in 0..3 {
        run_round(&mut e);
    }
    let before = rss_bytes();
    for _ in 0..12 {
        run_round(&mut e);
    }
    let after = rss_bytes();
    // 6000 runs in total; both outcomes occur, and the limits fired at least once.
    assert!(ok > 500 && failed > 500, "ok {ok} failed {failed}");
    assert!(limited > 0, "no script hit a limit");
    // 4800 runs after the warm-up: a leak of even 200 bytes per run would be ~1 MB.
    let grown = after.saturating_sub(before);
    assert!(
        grown < 1 << 20,
        "RSS grew by {grown} bytes ({before} -> {after})"
    );
    // The engine still works.
    assert_eq!(e.eval_as::<i64>("g(21)").unwrap(), 42);
}
