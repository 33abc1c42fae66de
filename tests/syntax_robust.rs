//! Robustness: huge and deeply nested inputs give "too deeply nested" errors (never a stack
//! overflow), and property tests: no input makes `parse_module` or `is_incomplete` panic;
//! random expressions printed with minimal parentheses parse back to the same tree.

mod syntax_util;
use kiln::source::FileId;
use kiln::syntax::{is_incomplete, parse_module};
use proptest::prelude::*;
use syntax_util::*;

const MB: usize = 1 << 20;

fn first_message(src: &str) -> String {
    match parse_module(src, FileId(0)) {
        Ok(_) => "ok".into(),
        Err(e) => e[0].message.clone(),
    }
}

fn assert_too_deep(src: &str, limit: usize) {
    assert_eq!(
        first_message(src),
        format!("too deeply nested (limit {limit})")
    );
    let _ = is_incomplete(src);
}

#[test]
fn megabyte_nesting_is_rejected() {
    assert_too_deep(&"(".repeat(MB), 200);
    assert_too_deep(&"[".repeat(MB), 200);
    assert_too_deep(&format!("{}x", "-".repeat(MB)), 200);
    assert_too_deep(&format!("{}x", "not ".repeat(MB / 4)), 200);
    assert_too_deep(&format!("x = {}", "1+".repeat(MB / 2) + "1"), 200);
    assert_too_deep(&format!("a{}", ".b".repeat(MB / 2)), 200);
    assert_too_deep(&format!("f{}", "(1)".repeat(MB / 3)), 200);
    assert_too_deep(&format!("a{}", "[0]".repeat(MB / 3)), 200);
    assert_too_deep(&format!("{}1", "2**".repeat(MB / 3)), 200);
    assert_too_deep(&format!("{}1", "lambda: ".repeat(MB / 8)), 200);
    assert_too_deep(&format!("{}1", "1 if x else ".repeat(MB / 12)), 200);
    assert_too_deep(&format!("{}1", "a or ".repeat(MB / 5)), 200);
    let mixed = format!(
        "x = {}{}1{}",
        "-(".repeat(120),
        "-".repeat(100),
        ")".repeat(120)
    );
    assert_too_deep(&mixed, 200);
}

#[test]
fn deep_blocks_are_rejected() {
    let mut src = String::new();
    for i in 0..2000 {
        src.push_str(&" ".repeat(i));
        src.push_str("if x:\n");
    }
    src.push_str(&" ".repeat(2000));
    src.push_str("pass\n");
    assert_too_deep(&src, 100);
}

#[test]
fn nesting_below_the_limits_parses() {
    let src = format!("x = {}1{}", "[".repeat(150), "]".repeat(150));
    assert_eq!(first_message(&src), "ok");
    let src = format!("x = {}", vec!["1"; 190].join("+"));
    assert_eq!(first_message(&src), "ok");
    let mut src = String::new();
    for i in 0..90 {
        src.push_str(&" ".repeat(i));
        src.push_str("while x:\n");
    }
    src.push_str(&" ".repeat(90));
    src.push_str("break\n");
    assert_eq!(first_message(&src), "ok");
}

#[test]
fn long_flat_inputs_parse() {
    let src = format!("x = [{}]", vec!["1"; 100_000].join(", "));
    assert_eq!(first_message(&src), "ok");
    let src = "x = 1\n".repeat(50_000);
    assert_eq!(module(&src).body.len(), 50_000);
    let src = "x = (\n".repeat(10_000);
    assert_eq!(first_message(&src), "too deeply nested (limit 200)");
}

#[test]
fn random_bytes_do_not_panic() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut bytes = Vec::with_capacity(MB);
    for _ in 0..MB {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        bytes.push((seed >> 24) as u8);
    }
    let src = String::from_utf8_lossy(&bytes);
    assert!(parse_module(&src, FileId(0)).is_err());
    let _ = is_incomplete(&src);
    let ascii: String = bytes
        .iter()
        .map(|b| (b % 96 + 32) as char)
        .map(|c| if c == '\x7f' { '\n' } else { c })
        .collect();
    assert!(parse_module(&ascii, FileId(0)).is_err());
    let _ = is_incomplete(&ascii);
}

const SNIPPETS: &[&str] = &[
    "x", "y", "f", "1", "2.5", "'s'", "f'{x}'", "\"\"\"", "(", ")", "[", "]", "{", "}", ",", ":",
    ".", ";", "=", "+", "-", "*", "**", "/", "//", "%", "@", "<", "==", "!=", "not", "in", "is",
    "and", "or", "if", "else", "elif", "for", "while", "def", "class", "return", "lambda", "try",
    "except", "finally", "with", "as", "del", "import", "from", "pass", "break", "continue",
    "global", "nonlocal", "assert", "raise", "None", "True", "...", "\n", "\n  ", "\n    ", "\\\n",
    "#c\n", "match", "yield", ":=", "->", "+=", "\t", "f'{", "}'", "!r", "*a",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_strings_do_not_panic(s in any::<String>()) {
        let _ = parse_module(&s, FileId(0));
        let _ = is_incomplete(&s);
    }

    #[test]
    fn python_ish_strings_do_not_panic(s in "[a-z0-9 ()\\[\\]{}:,.=+*/'\"\\\\\n\t#@!%<>&|^~;-]{0,120}") {
        let _ = parse_module(&s, FileId(0));
        let _ = is_incomplete(&s);
    }

    #[test]
    fn token_soups_do_not_panic(v in prop::collection::vec(0..SNIPPETS.len(), 0..60)) {
        let s: String = v.iter().map(|&i| SNIPPETS[i]).collect::<Vec<_>>().join(" ");
        let _ = parse_module(&s, FileId(0));
        let _ = is_incomplete(&s);
    }

    #[test]
    fn expressions_round_trip(e in arb_expr()) {
        let src = show(&e, 0);
        let m = module(&src);
        prop_assert_eq!(m.body.len(), 1);
        let kiln::syntax::ast::StmtKind::Expr(parsed) = &m.body[0].kind else {
            panic!("not an expression statement: {src}");
        };
        prop_assert_eq!(expr(parsed), sexp(&e), "source: {}", src);
        prop_assert_eq!(text(&src, parsed.span), src.as_str());
    }
}

/// A random expression tree, printed both as source and as the expected S-expression.
#[derive(Debug, Clone)]
enum E {
    Name(u8),
    Int(u16),
    Bin(&'static str, Box<E>, Box<E>),
    Un(&'static str, Box<E>),
    Bool(&'static str, Box<E>, Box<E>),
    Cmp(&'static str, Box<E>, Box<E>),
    IfX(Box<E>, Box<E>, Box<E>),
    Call(Box<E>, Vec<E>),
    Attr(Box<E>),
    Sub(Box<E>, Box<E>),
    List(Vec<E>),
}

const BINOPS: &[(&str, u8)] = &[
    ("|", 6),
    ("^", 7),
    ("&", 8),
    ("<<", 9),
    (">>", 9),
    ("+", 10),
    ("-", 10),
    ("*", 11),
    ("/", 11),
    ("//", 11),
    ("%", 11),
    ("@", 11),
    ("**", 13),
];

fn arb_expr() -> impl Strategy<Value = E> {
    let leaf = prop_oneof![(0u8..4).prop_map(E::Name), (0u16..100).prop_map(E::Int)];
    leaf.prop_recursive(5, 40, 3, |inner| {
        let b = || inner.clone().prop_map(Box::new);
        prop_oneof![
            (0..BINOPS.len(), b(), b()).prop_map(|(i, x, y)| E::Bin(BINOPS[i].0, x, y)),
            (
                prop_oneof![Just("-"), Just("+"), Just("~"), Just("not")],
                b()
            )
                .prop_map(|(o, x)| E::Un(o, x)),
            (prop_oneof![Just("and"), Just("or")], b(), b()).prop_map(|(o, x, y)| E::Bool(o, x, y)),
            (
                prop_oneof![Just("<"), Just("=="), Just("not in"), Just("is not")],
                b(),
                b()
            )
                .prop_map(|(o, x, y)| E::Cmp(o, x, y)),
            (b(), b(), b()).prop_map(|(x, c, y)| E::IfX(x, c, y)),
            (b(), prop::collection::vec(inner.clone(), 0..3)).prop_map(|(f, a)| E::Call(f, a)),
            b().prop_map(E::Attr),
            (b(), b()).prop_map(|(x, i)| E::Sub(x, i)),
            prop::collection::vec(inner.clone(), 0..3).prop_map(E::List),
        ]
    })
}

fn level(e: &E) -> u8 {
    match e {
        E::IfX(..) => 1,
        E::Bool("or", ..) => 2,
        E::Bool(..) => 3,
        E::Un("not", _) => 4,
        E::Cmp(..) => 5,
        E::Bin(op, ..) => BINOPS.iter().find(|b| b.0 == *op).map_or(0, |b| b.1),
        E::Un(..) => 12,
        E::Call(..) | E::Attr(_) | E::Sub(..) => 14,
        E::Name(_) | E::Int(_) | E::List(_) => 15,
    }
}

/// Source text with parentheses only where Python's precedence needs them.
fn show(e: &E, min: u8) -> String {
    let s = match e {
        E::Name(n) => ["a", "b", "c", "d"][*n as usize].to_string(),
        E::Int(i) => i.to_string(),
        E::Bin("**", x, y) => format!("{} ** {}", show(x, 14), show(y, 12)),
        E::Bin(op, x, y) => {
            let l = level(e);
            format!("{} {op} {}", show(x, l), show(y, l + 1))
        }
        E::Un("not", x) => format!("not {}", show(x, 4)),
        E::Un(op, x) => format!("{op}{}", show(x, 12)),
        E::Bool(op, x, y) => {
            let l = level(e);
            format!("{} {op} {}", show(x, l), show(y, l + 1))
        }
        E::Cmp(op, x, y) => format!("{} {op} {}", show(x, 6), show(y, 6)),
        E::IfX(x, c, y) => format!("{} if {} else {}", show(x, 2), show(c, 2), show(y, 1)),
        E::Call(f, a) => format!(
            "{}({})",
            primary(f),
            a.iter().map(|x| show(x, 1)).collect::<Vec<_>>().join(", ")
        ),
        E::Attr(x) => format!("{}.t", primary(x)),
        E::Sub(x, i) => format!("{}[{}]", primary(x), show(i, 1)),
        E::List(v) => format!(
            "[{}]",
            v.iter().map(|x| show(x, 1)).collect::<Vec<_>>().join(", ")
        ),
    };
    if level(e) < min {
        format!("({s})")
    } else {
        s
    }
}

fn primary(e: &E) -> String {
    match e {
        E::Int(_) => format!("({})", show(e, 0)),
        _ => show(e, 14),
    }
}

/// The expected S-expression (the format of `syntax_util::expr`).
fn sexp(e: &E) -> String {
    match e {
        E::Name(_) | E::Int(_) => show(e, 0),
        E::Bin(op, x, y) => format!("({op} {} {})", sexp(x), sexp(y)),
        E::Un(op, x) => format!("({op} {})", sexp(x)),
        E::Bool(op, x, y) => format!("({op} {} {})", sexp(x), sexp(y)),
        E::Cmp(op, x, y) => format!("(cmp {} {op} {})", sexp(x), sexp(y)),
        E::IfX(x, c, y) => format!("(ifx {} {} {})", sexp(c), sexp(x), sexp(y)),
        E::Call(f, a) if a.is_empty() => format!("(call {})", sexp(f)),
        E::Call(f, a) => format!(
            "(call {} {})",
            sexp(f),
            a.iter().map(sexp).collect::<Vec<_>>().join(" ")
        ),
        E::Attr(x) => format!("(. {} t)", sexp(x)),
        E::Sub(x, i) => format!("([] {} {})", sexp(x), sexp(i)),
        E::List(v) if v.is_empty() => "(list)".into(),
        E::List(v) => format!(
            "(list {})",
            v.iter().map(sexp).collect::<Vec<_>>().join(" ")
        ),
    }
}
