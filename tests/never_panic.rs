//! Property test: arbitrary token soups and mutated programs never panic or hang
//! the Engine; each run returns Ok or Err.

use kiln::Engine;
use proptest::prelude::*;
use std::sync::atomic::Ordering;
use std::time::Duration;

const TOKENS: &[&str] = &[
    "x",
    "y",
    "f",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ":",
    ",",
    ".",
    "=",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "<",
    ">",
    "==",
    "not",
    "and",
    "or",
    "in",
    "is",
    "if",
    "else",
    "elif",
    "for",
    "while",
    "def",
    "class",
    "return",
    "lambda",
    "try",
    "except",
    "finally",
    "raise",
    "with",
    "as",
    "import",
    "from",
    "del",
    "global",
    "nonlocal",
    "pass",
    "break",
    "continue",
    "assert",
    "1",
    "0",
    "2.5",
    "'s'",
    "\"t\"",
    "None",
    "True",
    "False",
    "\n",
    "\n    ",
    "    ",
    "*",
    "**",
    "@",
    "...",
    "f'{x}'",
    "range",
    "len",
    "print",
    "super",
    "self",
    "[1, 2]",
    "{1: 2}",
    "(1,)",
    "x[0]",
    "x.y",
    "1e308",
    "9223372036854775807",
    "yield",
    "yield from",
    ":=",
    "{1, 2}",
    "{**x}",
];

const PROGRAMS: &[&str] = &[
    "def f(n):\n    return f(n - 1) if n else 0\nprint(f(50))\n",
    "class A:\n    def __init__(self, v):\n        self.v = v\n    def __add__(self, o):\n        return A(self.v + o.v)\nprint((A(1) + A(2)).v)\n",
    "xs = [i * i for i in range(20)]\nd = {k: v for k, v in enumerate(xs)}\nprint(sum(d.values()), xs[::-3])\n",
    "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    print(e)\nfinally:\n    print('done')\n",
    "x = 0\nwhile x < 100:\n    x += 7\n    if x % 5 == 0:\n        continue\nprint(x)\n",
    "def g(n):\n    for i in range(n):\n        try:\n            x = yield i\n        finally:\n            pass\n    return n\nprint(sum(g(5)), list(x * 2 for x in g(3)))\n",
    "s = {1, 2}\nd = {**{1: 2}, 3: 4}\nprint(sorted(s | {3}), d, [*s], (n := 4))\n",
];

/// Runs `src` with a watchdog that interrupts it after a short time.
fn run_guarded(src: &str) {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e.set_max_depth(200);
    let flag = e.interrupt_handle();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done2 = done.clone();
    let watchdog = std::thread::spawn(move || {
        for _ in 0..40 {
            if done2.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        flag.store(true, Ordering::Relaxed);
    });
    let _ = e.eval(src);
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn token_soup_never_panics(idx in prop::collection::vec(0..TOKENS.len(), 0..40)) {
        let src: String = idx.iter().map(|i| TOKENS[*i]).collect::<Vec<_>>().join(" ");
        run_guarded(&src);
    }

    #[test]
    fn mutated_programs_never_panic(p in 0..PROGRAMS.len(), pos in 0usize..400, tok in 0..TOKENS.len(), del in 0usize..4) {
        let base = PROGRAMS[p];
        let mut cut = pos.min(base.len());
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut end = (cut + del).min(base.len());
        while !base.is_char_boundary(end) {
            end -= 1;
        }
        let src = format!("{}{}{}", &base[..cut], TOKENS[tok], &base[end..]);
        run_guarded(&src);
    }
}

#[test]
fn deep_recursion_and_nesting_do_not_overflow() {
    let mut e = Engine::new();
    e.set_output(Box::new(|_| {}));
    e.set_max_depth(100_000);
    let r = e.eval("def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nf(20000)");
    assert!(r.is_ok(), "{:?}", r.err());
    let r = e.eval("x = None\nfor i in range(200000):\n    x = [x]\nprint(len(repr(x)) > 0)");
    assert!(r.is_ok() || r.is_err());
    let r = e.eval(&format!("y = {}1{}", "(".repeat(5000), ")".repeat(5000)));
    assert!(r.is_ok() || r.is_err());
    // nested generators resume through every level: deep, but no native overflow
    let src = "def d(n):\n    if n:\n        yield from d(n - 1)\n    else:\n        yield 7\nprint(list(d(3000)))";
    let r = e.eval(src);
    assert!(r.is_ok(), "{:?}", r.err());
}
