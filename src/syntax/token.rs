//! The logos lexer: source text to tokens with absolute byte spans (layout comes later).
//!
//! `lex` turns `src[start..end]` into `(start, Tok, end)` triples whose offsets are byte
//! offsets in the whole file, so sub-lexing an f-string expression keeps file positions.
//! Physical newlines become `Tok::Newline`; the layout pass decides which ones matter.

use super::strings;
use crate::error::Error;
use crate::source::{FileId, Span};
use logos::Logos;
use std::rc::Rc;

/// A token with its absolute byte span, as lalrpop's external lexer interface wants it.
pub type Spanned = (usize, Tok, usize);

/// A string literal token: decoded text, or the raw body of an f-string (parsed later).
#[derive(Debug, Clone, PartialEq)]
pub enum StrTok {
    Plain(Rc<str>),
    /// An f-string whose body is `src[start..end]` of the file; `raw` for `rf"..."`.
    F {
        start: usize,
        end: usize,
        raw: bool,
    },
}

/// Why lexing failed at a span (logos errors carry no span; the wrapper adds it).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LexError {
    #[default]
    Unexpected,
    IntTooLarge,
    BadNumber(&'static str),
    Unterminated {
        triple: bool,
    },
    BadEscape(&'static str),
    Unsupported(&'static str),
    /// A `\` that is not followed by a newline; `at_eof` when it ends the input.
    StrayBackslash {
        at_eof: bool,
    },
}

#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(error = LexError)]
#[logos(skip r"[ \t\f\r]+")]
#[logos(skip(r"#[^\n]*", allow_greedy = true))]
#[logos(skip r"\\\r?\n")]
pub enum Tok {
    #[token("\n")]
    Newline,
    /// Produced by the layout pass, never by logos.
    Indent,
    /// Produced by the layout pass, never by logos.
    Dedent,
    /// Start marker: the token stream is a whole module.
    StartModule,
    /// Start marker: the token stream is one expression (inside an f-string).
    StartExpr,

    #[regex(r"[_\p{XID_Start}]\p{XID_Continue}*", |lex| Rc::<str>::from(lex.slice()))]
    Name(Rc<str>),
    #[regex(r"[0-9](_?[0-9])*", lex_dec)]
    #[regex(r"0[xX](_?[0-9a-fA-F])+", |lex| lex_radix(lex, 16))]
    #[regex(r"0[oO](_?[0-7])+", |lex| lex_radix(lex, 8))]
    #[regex(r"0[bB](_?[01])+", |lex| lex_radix(lex, 2))]
    Int(i64),
    #[regex(
        r"[0-9](_?[0-9])*\.([0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?",
        lex_float
    )]
    #[regex(r"\.[0-9](_?[0-9])*([eE][+-]?[0-9](_?[0-9])*)?", lex_float)]
    #[regex(r"[0-9](_?[0-9])*[eE][+-]?[0-9](_?[0-9])*", lex_float)]
    Float(f64),
    #[regex(r#"([rRfFuU]|[rR][fF]|[fF][rR])?["']"#, strings::lex_string)]
    Str(StrTok),
    /// Unsupported literals (bytes, complex numbers): lexed only to report them clearly.
    #[regex(r#"([bB]|[rR][bB]|[bB][rR])["']"#, bytes_literal)]
    #[regex(r"[0-9](_?[0-9])*([eE][+-]?[0-9](_?[0-9])*)?[jJ]", complex_literal)]
    #[regex(
        r"[0-9](_?[0-9])*\.([0-9](_?[0-9])*)?([eE][+-]?[0-9](_?[0-9])*)?[jJ]",
        complex_literal
    )]
    #[regex(r"\.[0-9](_?[0-9])*([eE][+-]?[0-9](_?[0-9])*)?[jJ]", complex_literal)]
    Unsupported,
    #[token("\\", stray_backslash)]
    Backslash,

    #[token("False")]
    False,
    #[token("None")]
    None,
    #[token("True")]
    True,
    #[token("and")]
    And,
    #[token("as")]
    As,
    #[token("assert")]
    Assert,
    #[token("break")]
    Break,
    #[token("class")]
    Class,
    #[token("continue")]
    Continue,
    #[token("def")]
    Def,
    #[token("del")]
    Del,
    #[token("elif")]
    Elif,
    #[token("else")]
    Else,
    #[token("except")]
    Except,
    #[token("finally")]
    Finally,
    #[token("for")]
    For,
    #[token("from")]
    From,
    #[token("global")]
    Global,
    #[token("if")]
    If,
    #[token("import")]
    Import,
    #[token("in")]
    In,
    #[token("is")]
    Is,
    #[token("lambda")]
    Lambda,
    #[token("nonlocal")]
    Nonlocal,
    #[token("not")]
    Not,
    #[token("or")]
    Or,
    #[token("pass")]
    Pass,
    #[token("raise")]
    Raise,
    #[token("return")]
    Return,
    #[token("try")]
    Try,
    #[token("while")]
    While,
    #[token("with")]
    With,
    /// Unsupported keywords: lexed so that they get a clear error.
    #[token("yield")]
    Yield,
    #[token("async")]
    Async,
    #[token("await")]
    Await,

    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("**")]
    DoubleStar,
    #[token("/")]
    Slash,
    #[token("//")]
    DoubleSlash,
    #[token("%")]
    Percent,
    #[token("@")]
    At,
    #[token("<<")]
    LShift,
    #[token(">>")]
    RShift,
    #[token("&")]
    Amper,
    #[token("|")]
    Vbar,
    #[token("^")]
    Circumflex,
    #[token("~")]
    Tilde,
    #[token("<")]
    Less,
    #[token(">")]
    Greater,
    #[token("<=")]
    LessEqual,
    #[token(">=")]
    GreaterEqual,
    #[token("==")]
    EqEqual,
    #[token("!=")]
    NotEqual,
    #[token("(")]
    Lpar,
    #[token(")")]
    Rpar,
    #[token("[")]
    Lsqb,
    #[token("]")]
    Rsqb,
    #[token("{")]
    Lbrace,
    #[token("}")]
    Rbrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token(".")]
    Dot,
    #[token(";")]
    Semi,
    #[token("=")]
    Equal,
    #[token("->")]
    Rarrow,
    #[token("...")]
    Ellipsis,
    #[token(":=")]
    Walrus,
    #[token("!")]
    Exclamation,
    #[token("+=")]
    PlusEqual,
    #[token("-=")]
    MinusEqual,
    #[token("*=")]
    StarEqual,
    #[token("/=")]
    SlashEqual,
    #[token("//=")]
    DoubleSlashEqual,
    #[token("%=")]
    PercentEqual,
    #[token("**=")]
    DoubleStarEqual,
    #[token("@=")]
    AtEqual,
    #[token("&=")]
    AmperEqual,
    #[token("|=")]
    VbarEqual,
    #[token("^=")]
    CircumflexEqual,
    #[token("<<=")]
    LShiftEqual,
    #[token(">>=")]
    RShiftEqual,
}

/// Consumes the whole bytes literal (so that the error covers it) and rejects it.
fn bytes_literal(lex: &mut logos::Lexer<Tok>) -> Result<(), LexError> {
    strings::lex_string(lex)?;
    Err(LexError::Unsupported("bytes literals are not supported"))
}

fn complex_literal(_: &mut logos::Lexer<Tok>) -> Result<(), LexError> {
    Err(LexError::Unsupported("complex numbers are not supported"))
}

fn stray_backslash(lex: &mut logos::Lexer<Tok>) -> Result<(), LexError> {
    let at_eof = lex.remainder().trim().is_empty();
    Err(LexError::StrayBackslash { at_eof })
}

fn digits(s: &str) -> String {
    s.chars().filter(|&c| c != '_').collect()
}

fn lex_dec(lex: &mut logos::Lexer<Tok>) -> Result<i64, LexError> {
    let d = digits(lex.slice());
    if d.len() > 1 && d.starts_with('0') && d.bytes().any(|b| b != b'0') {
        return Err(LexError::BadNumber(
            "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
        ));
    }
    d.parse::<i64>().map_err(|_| LexError::IntTooLarge)
}

fn lex_radix(lex: &mut logos::Lexer<Tok>, radix: u32) -> Result<i64, LexError> {
    let d = digits(lex.slice().get(2..).unwrap_or(""));
    i64::from_str_radix(&d, radix).map_err(|_| LexError::IntTooLarge)
}

fn lex_float(lex: &mut logos::Lexer<Tok>) -> Result<f64, LexError> {
    digits(lex.slice())
        .parse::<f64>()
        .map_err(|_| LexError::BadNumber("invalid float literal"))
}

/// The result of lexing: tokens, every error found, and whether the input merely
/// stopped early (an unterminated triple-quoted string or a final `\`).
#[derive(Debug, Default)]
pub struct Lexed {
    pub toks: Vec<Spanned>,
    pub errors: Vec<Error>,
    pub incomplete: bool,
}

/// Lexes `src[start..end]`; spans are absolute offsets into `src` (the whole file).
pub fn lex(src: &str, start: usize, end: usize, file: FileId) -> Lexed {
    let mut out = Lexed::default();
    let Some(text) = src.get(start..end) else {
        return out;
    };
    let mut lexer = Tok::lexer(text);
    while let Some(res) = lexer.next() {
        let r = lexer.span();
        let span = Span::new(file, start + r.start, start + r.end);
        match res {
            Ok(tok) => match unsupported(&tok) {
                Some(msg) => out.errors.push(Error::syntax(msg, span)),
                None => out
                    .toks
                    .push((span.start as usize, shift(tok, start), span.end as usize)),
            },
            Err(e) => {
                out.incomplete |= matches!(
                    e,
                    LexError::Unterminated { triple: true }
                        | LexError::StrayBackslash { at_eof: true }
                );
                out.errors
                    .push(Error::syntax(lex_message(&e, lexer.slice()), span));
            }
        }
    }
    out
}

/// Moves the offsets an f-string token carries from `text`-relative to file-absolute.
fn shift(tok: Tok, base: usize) -> Tok {
    match tok {
        Tok::Str(StrTok::F { start, end, raw }) => Tok::Str(StrTok::F {
            start: start + base,
            end: end + base,
            raw,
        }),
        t => t,
    }
}

fn unsupported(tok: &Tok) -> Option<&'static str> {
    match tok {
        Tok::Async => Some("'async' is not supported"),
        Tok::Await => Some("'await' is not supported"),
        _ => None,
    }
}

fn lex_message(e: &LexError, slice: &str) -> String {
    match e {
        LexError::Unexpected => match slice.chars().next() {
            Some('$') | Some('?') | Some('`') => format!("invalid character '{slice}'"),
            Some(c) if !c.is_ascii() => format!("invalid character '{c}' (U+{:04X})", c as u32),
            _ => "invalid syntax".into(),
        },
        LexError::IntTooLarge => "integer literal too large".into(),
        LexError::BadNumber(m) | LexError::BadEscape(m) | LexError::Unsupported(m) => (*m).into(),
        LexError::Unterminated { triple: false } => "unterminated string literal".into(),
        LexError::Unterminated { triple: true } => {
            "unterminated triple-quoted string literal".into()
        }
        LexError::StrayBackslash { .. } => {
            "unexpected character after line continuation character".into()
        }
    }
}
