//! Driving the lalrpop parser: module and f-string-expression entry points, statement-level
//! error recovery, and turning lalrpop errors into Python-style messages.

use super::actions::{Cx, Node};
use super::ast::{Module, Stmt};
use super::layout::{layout, Mode};
use super::token::{lex, Spanned, Tok};
use super::validate::validate;
use crate::error::{Error, ErrorKind};
use crate::source::{FileId, Span};
use lalrpop_util::{lalrpop_mod, ParseError};

lalrpop_mod!(
    #[allow(
        clippy::all,
        clippy::pedantic,
        unused_parens,
        unused_variables,
        dead_code
    )]
    grammar,
    "/kiln.rs"
);

/// What the grammar's single entry point produced (chosen by the start marker token).
#[derive(Debug)]
pub enum Top {
    Module(Vec<Stmt>),
    Expr(Node),
}

/// The most errors one `parse_module` reports (recovery stops there).
const MAX_ERRORS: usize = 50;

/// Parses a whole file; see `syntax::parse_module`.
pub fn parse_module(src: &str, file: FileId) -> Result<Module, Vec<Error>> {
    let lexed = lex(src, 0, src.len(), file);
    if !lexed.errors.is_empty() {
        return Err(lexed.errors);
    }
    let laid = layout(src, file, &lexed.toks, Mode::Module, 0).map_err(|e| vec![e.error])?;
    let cx = Cx {
        src,
        file,
        fdepth: 0,
    };
    let mut errors = Vec::new();
    let body = parse_recovering(&cx, &laid.toks, &mut errors);
    validate(&body, &mut errors);
    if errors.is_empty() {
        Ok(Module {
            body,
            span: Span::new(file, 0, src.len()),
        })
    } else {
        Err(errors)
    }
}

/// Parses `toks` (which start with the module marker); after an error, resumes at the next
/// top-level statement so that later errors are found too.
fn parse_recovering(cx: &Cx, toks: &[Spanned], errors: &mut Vec<Error>) -> Vec<Stmt> {
    let starts = top_level_starts(toks);
    let parser = grammar::TopParser::new();
    let mut body = Vec::new();
    let mut seg = 1;
    loop {
        let at = toks.get(seg).map_or(0, |t| t.0);
        let marker = std::iter::once((at, Tok::StartModule, at));
        let stream = marker.chain(toks.iter().skip(seg).cloned());
        match parser.parse(cx, stream) {
            Ok(Top::Module(stmts)) => {
                body.extend(stmts);
                return body;
            }
            Ok(Top::Expr(_)) => return body,
            Err(e) => {
                let (err, pos) = convert(cx, e, toks, false);
                errors.push(err);
                let next = starts.iter().find(|&&i| i > seg && toks[i].0 > pos);
                match next {
                    Some(&i) if errors.len() < MAX_ERRORS => seg = i,
                    _ => return body,
                }
            }
        }
    }
}

/// Indices of the first token of every top-level statement (after the start marker).
fn top_level_starts(toks: &[Spanned]) -> Vec<usize> {
    let mut level = 0i64;
    let mut out = Vec::new();
    for (i, (_, t, _)) in toks.iter().enumerate() {
        match t {
            Tok::Indent => level += 1,
            Tok::Dedent => level -= 1,
            Tok::Newline | Tok::StartModule => {}
            _ if level == 0 && i > 0 => {
                if matches!(toks[i - 1].1, Tok::Newline | Tok::Dedent) {
                    out.push(i);
                }
            }
            _ => {}
        }
    }
    out
}

/// Parses the expression `src[start..end]` of an f-string field (spans stay file offsets).
pub fn parse_expr(
    src: &str,
    file: FileId,
    start: usize,
    end: usize,
    fdepth: u32,
) -> Result<Node, Error> {
    let lexed = lex(src, start, end, file);
    if let Some(e) = lexed.errors.into_iter().next() {
        return Err(e);
    }
    let laid = layout(src, file, &lexed.toks, Mode::Expr, start).map_err(|e| e.error)?;
    let cx = Cx { src, file, fdepth };
    let parser = grammar::TopParser::new();
    match parser.parse(&cx, laid.toks.iter().cloned()) {
        Ok(Top::Expr(n)) => Ok(n),
        Ok(Top::Module(_)) => Err(Error::syntax(
            "f-string: invalid syntax",
            Span::new(file, start, end),
        )),
        Err(e) => Err(convert(&cx, e, &laid.toks, true).0),
    }
}

/// True when `src` is an incomplete input that more lines could finish; see
/// `syntax::is_incomplete`.
pub fn is_incomplete(src: &str) -> bool {
    let file = FileId::default();
    let lexed = lex(src, 0, src.len(), file);
    if lexed.incomplete || ends_with_continuation(src, file) {
        return true;
    }
    if !lexed.errors.is_empty() {
        return false;
    }
    let laid = match layout(src, file, &lexed.toks, Mode::Module, 0) {
        Ok(l) => l,
        Err(e) => return e.incomplete,
    };
    if ends_with_blank_line(src) {
        return false;
    }
    let cx = Cx {
        src,
        file,
        fdepth: 0,
    };
    match grammar::TopParser::new().parse(&cx, laid.toks.iter().cloned()) {
        Ok(_) => laid.open_block,
        Err(ParseError::UnrecognizedEof { .. }) => true,
        Err(ParseError::UnrecognizedToken {
            token: (l, Tok::Dedent, _),
            ..
        }) => only_closing_dedents(&laid.toks, l),
        Err(_) => false,
    }
}

/// Whether the parser stopped at the DEDENTs the layout pass adds at end of input (a
/// nested block opener such as `if a:\n    if b:\n` still waits for its body). Those sit
/// at the end offset, after every real token, so the last token is one at byte `at`.
fn only_closing_dedents(toks: &[Spanned], at: usize) -> bool {
    toks.last().is_some_and(|t| t.1 == Tok::Dedent && t.0 == at)
}

/// A final backslash + newline that the lexer reads as a line continuation (not inside a
/// comment or string): the statement goes on on the next line.
fn ends_with_continuation(src: &str, file: FileId) -> bool {
    let body = src.strip_suffix('\n').unwrap_or(src);
    let body = body.strip_suffix('\r').unwrap_or(body);
    body.len() < src.len() && body.ends_with('\\') && lex(body, 0, body.len(), file).incomplete
}

/// An empty (or whitespace-only) last line after at least one line: closes open blocks.
fn ends_with_blank_line(src: &str) -> bool {
    let Some(body) = src.strip_suffix('\n') else {
        return false;
    };
    let last = body.rsplit('\n').next().unwrap_or("");
    body.contains('\n') && last.trim().is_empty()
}

type LError = ParseError<usize, Tok, Error>;

/// A Python-style error for a lalrpop error, with the byte offset where it happened.
fn convert(cx: &Cx, e: LError, toks: &[Spanned], fstring: bool) -> (Error, usize) {
    let prefix = if fstring { "f-string: " } else { "" };
    let syntax =
        |msg: &str, l: usize, r: usize| Error::syntax(format!("{prefix}{msg}"), cx.span(l, r));
    match e {
        ParseError::User { error } => {
            let pos = error.span.map_or(0, |s| s.start as usize);
            (error, pos)
        }
        ParseError::InvalidToken { location } => {
            (syntax("invalid syntax", location, location), location)
        }
        ParseError::ExtraToken { token: (l, _, r) } => (syntax("invalid syntax", l, r), l),
        ParseError::UnrecognizedEof { location, expected } => {
            let idx = toks.len();
            let err = match block_header(cx, toks, idx, &expected) {
                Some(msg) => indentation(cx, msg, location, location),
                None => syntax("unexpected end of input", location, location),
            };
            (err, location)
        }
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => {
            let idx = toks
                .iter()
                .position(|t| t.0 == l && t.1 == tok)
                .unwrap_or(toks.len());
            let err = if tok == Tok::Indent {
                indentation(cx, "unexpected indent".into(), l, r.max(l + 1))
            } else if let Some(msg) = block_header(cx, toks, idx, &expected) {
                indentation(cx, msg, l, r)
            } else {
                syntax(&unexpected(&tok, &expected), l, r)
            };
            (err, l)
        }
    }
}

fn indentation(cx: &Cx, msg: String, l: usize, r: usize) -> Error {
    Error::new(ErrorKind::IndentationError, msg, Some(cx.span(l, r)))
}

/// The message for an unexpected token, condensing lalrpop's expected list.
fn unexpected(tok: &Tok, expected: &[String]) -> String {
    let has = |s: &str| expected.iter().any(|e| e == s);
    if has("\"except\"") && has("\"finally\"") {
        return "expected 'except' or 'finally' block".into();
    }
    if *tok == Tok::Newline && has("\":\"") {
        return "expected ':'".into();
    }
    "invalid syntax".into()
}

/// "expected an indented block after 'if' statement on line 3" when an INDENT was expected
/// before token index `idx`.
fn block_header(cx: &Cx, toks: &[Spanned], idx: usize, expected: &[String]) -> Option<String> {
    if !expected.iter().any(|e| e == "INDENT") {
        return None;
    }
    let mut k = idx.checked_sub(2)?;
    while k > 0
        && !matches!(
            toks[k - 1].1,
            Tok::Newline | Tok::Indent | Tok::Dedent | Tok::StartModule
        )
    {
        k -= 1;
    }
    let (pos, kw, _) = toks.get(k)?;
    let what = match kw {
        Tok::If => "'if' statement",
        Tok::Elif => "'elif' statement",
        Tok::Else => "'else' statement",
        Tok::While => "'while' statement",
        Tok::For => "'for' statement",
        Tok::Try => "'try' statement",
        Tok::Except => "'except' statement",
        Tok::Finally => "'finally' statement",
        Tok::With => "'with' statement",
        Tok::Def => "function definition",
        Tok::Class => "class definition",
        _ => return Some("expected an indented block".into()),
    };
    let line = cx.src.get(..*pos).unwrap_or("").matches('\n').count() + 1;
    Some(format!(
        "expected an indented block after {what} on line {line}"
    ))
}
