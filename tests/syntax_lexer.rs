//! Lexer and layout-pass unit tests.

use kiln::source::FileId;
use kiln::syntax::layout::{layout, Mode};
use kiln::syntax::token::{lex, StrTok, Tok};

fn toks(src: &str) -> Vec<Tok> {
    let l = lex(src, 0, src.len(), FileId(0));
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    l.toks.into_iter().map(|t| t.1).collect()
}

fn one(src: &str) -> Tok {
    let mut t = toks(src);
    assert_eq!(t.len(), 1, "{src:?} -> {t:?}");
    t.remove(0)
}

fn s(src: &str) -> String {
    match one(src) {
        Tok::Str(StrTok::Plain(s)) => s.to_string(),
        t => panic!("not a string: {t:?}"),
    }
}

#[test]
fn numbers() {
    assert_eq!(one("12"), Tok::Int(12));
    assert_eq!(one("0"), Tok::Int(0));
    assert_eq!(one("00"), Tok::Int(0));
    assert_eq!(one("0x1f"), Tok::Int(31));
    assert_eq!(one("0XFF"), Tok::Int(255));
    assert_eq!(one("0o17"), Tok::Int(15));
    assert_eq!(one("0b101"), Tok::Int(5));
    assert_eq!(one("1_000"), Tok::Int(1000));
    assert_eq!(one("0x_ff"), Tok::Int(255));
    assert_eq!(one("9223372036854775807"), Tok::Int(i64::MAX));
    assert_eq!(one("1.0"), Tok::Float(1.0));
    assert_eq!(one("1."), Tok::Float(1.0));
    assert_eq!(one(".5"), Tok::Float(0.5));
    assert_eq!(one("1e-3"), Tok::Float(0.001));
    assert_eq!(one("2.5E+2"), Tok::Float(250.0));
    assert_eq!(one("1_0.5"), Tok::Float(10.5));
    let l = lex("9223372036854775808", 0, 19, FileId(0));
    assert_eq!(l.errors[0].message, "integer literal too large");
    let l = lex("0x1_0000_0000_0000_0000", 0, 23, FileId(0));
    assert_eq!(l.errors[0].message, "integer literal too large");
}

#[test]
fn strings_and_escapes() {
    assert_eq!(s("'a'"), "a");
    assert_eq!(s("\"a'b\""), "a'b");
    assert_eq!(s(r#"'\n\t\r\0\\\'\"'"#), "\n\t\r\0\\'\"");
    assert_eq!(s(r"'\x41\u00e9\U0001F600'"), "Aé😀");
    assert_eq!(s(r"'\101\7'"), "A\x07");
    assert_eq!(s(r"'\d'"), "\\d");
    assert_eq!(s("'a\\\nb'"), "ab");
    assert_eq!(s("'''a\n'b'\"\"\"'''"), "a\n'b'\"\"\"");
    assert_eq!(s("\"\"\"x\"\"\""), "x");
    assert_eq!(s("''"), "");
    assert_eq!(s(r"r'\n\''"), "\\n\\'");
    assert_eq!(s(r"R'\d'"), "\\d");
    assert_eq!(s("u'x'"), "x");
    assert_eq!(s("'é'"), "é");
    let f = one("f'a{x}'");
    assert!(
        matches!(
            f,
            Tok::Str(StrTok::F {
                start: 2,
                end: 6,
                raw: false
            })
        ),
        "{f:?}"
    );
    assert!(matches!(
        one("rf'{x}'"),
        Tok::Str(StrTok::F { raw: true, .. })
    ));
    assert!(matches!(
        one("Fr'{x}'"),
        Tok::Str(StrTok::F { raw: true, .. })
    ));
    assert!(matches!(
        one("f'''{x}\n'''"),
        Tok::Str(StrTok::F {
            start: 4,
            end: 8,
            ..
        })
    ));
}

#[test]
fn names_keywords_operators() {
    use Tok::*;
    let t = toks("def f(x): return x if not y else None and True or False");
    assert_eq!(t[0], Def);
    assert_eq!(t[1], Name("f".into()));
    assert!(t.contains(&Return) && t.contains(&If) && t.contains(&Not) && t.contains(&None));
    assert_eq!(one("_x1"), Name("_x1".into()));
    assert_eq!(one("données"), Name("données".into()));
    assert_eq!(one("matches"), Name("matches".into()));
    assert_eq!(one("iff"), Name("iff".into()));
    assert_eq!(
        toks("+ - * ** / // % @ << >> & | ^ ~ < > <= >= == != -> ..."),
        vec![
            Plus,
            Minus,
            Star,
            DoubleStar,
            Slash,
            DoubleSlash,
            Percent,
            At,
            LShift,
            RShift,
            Amper,
            Vbar,
            Circumflex,
            Tilde,
            Less,
            Greater,
            LessEqual,
            GreaterEqual,
            EqEqual,
            NotEqual,
            Rarrow,
            Ellipsis
        ]
    );
    assert_eq!(
        toks("+= -= *= /= //= %= **= @= &= |= ^= <<= >>= = ( ) [ ] { } , : . ;"),
        vec![
            PlusEqual,
            MinusEqual,
            StarEqual,
            SlashEqual,
            DoubleSlashEqual,
            PercentEqual,
            DoubleStarEqual,
            AtEqual,
            AmperEqual,
            VbarEqual,
            CircumflexEqual,
            LShiftEqual,
            RShiftEqual,
            Equal,
            Lpar,
            Rpar,
            Lsqb,
            Rsqb,
            Lbrace,
            Rbrace,
            Comma,
            Colon,
            Dot,
            Semi
        ]
    );
    assert_eq!(
        toks("a # comment\nb"),
        vec![Name("a".into()), Newline, Name("b".into())]
    );
    assert_eq!(toks("a \\\n b"), vec![Name("a".into()), Name("b".into())]);
}

#[test]
fn lexer_error_spans() {
    let l = lex("x = 'ab\n", 0, 8, FileId(0));
    assert_eq!(l.errors[0].message, "unterminated string literal");
    assert_eq!(l.errors[0].span.map(|s| (s.start, s.end)), Some((4, 7)));
    assert!(!l.incomplete);
    let l = lex("x = \"\"\"ab\n", 0, 10, FileId(0));
    assert!(l.incomplete);
    let l = lex("a $ b ? c", 0, 9, FileId(0));
    assert_eq!(l.errors.len(), 2);
    assert_eq!(l.errors[1].span.map(|s| s.start), Some(6));
}

fn laid(src: &str) -> Vec<Tok> {
    let l = lex(src, 0, src.len(), FileId(0));
    let out = layout(src, FileId(0), &l.toks, Mode::Module, 0).expect("layout failed");
    out.toks.into_iter().map(|t| t.1).skip(1).collect()
}

fn shape(src: &str) -> String {
    laid(src)
        .iter()
        .map(|t| match t {
            Tok::Newline => "NL".to_string(),
            Tok::Indent => "IN".to_string(),
            Tok::Dedent => "DE".to_string(),
            Tok::Name(n) => n.to_string(),
            _ => "?".to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn layout_indentation() {
    assert_eq!(shape("a\nb"), "a NL b NL");
    assert_eq!(shape("a\n  b\n  c\nd\n"), "a NL IN b NL c NL DE d NL");
    assert_eq!(shape("a\n  b\n    c\n"), "a NL IN b NL IN c NL DE DE");
    assert_eq!(shape("a\n  b\n    c\nd"), "a NL IN b NL IN c NL DE DE d NL");
    assert_eq!(shape("a\n\n   \n  # c\n  b\n"), "a NL IN b NL DE");
    assert_eq!(shape("# c\n\na"), "a NL");
    assert_eq!(shape(""), "");
    assert_eq!(shape("a + (\n b\n   c)\nd"), "a ? ? b c ? NL d NL");
    assert_eq!(shape("a [\n]\n{\n}"), "a ? ? NL ? ? NL");
    assert_eq!(shape("a \\\n  b\nc"), "a b NL c NL");
    assert_eq!(shape("a\r\n  b\r\n"), "a NL IN b NL DE");
}

#[test]
fn layout_errors() {
    let src = "a\n \tb";
    let l = lex(src, 0, src.len(), FileId(0));
    let e = layout(src, FileId(0), &l.toks, Mode::Module, 0).unwrap_err();
    assert_eq!(e.error.message, "tab in indentation");
    assert_eq!(e.error.span.map(|s| s.start), Some(3));
    let src = "x = [1,\n (2";
    let l = lex(src, 0, src.len(), FileId(0));
    let e = layout(src, FileId(0), &l.toks, Mode::Module, 0).unwrap_err();
    assert_eq!(e.error.message, "'[' was never closed");
    assert_eq!(e.error.span.map(|s| s.start), Some(4));
    assert!(e.incomplete);
    let src = "a = 1\tb";
    let l = lex(src, 0, src.len(), FileId(0));
    assert!(layout(src, FileId(0), &l.toks, Mode::Module, 0).is_ok());
}
