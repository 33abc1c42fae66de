//! The layout pass: physical newlines and indentation to NEWLINE / INDENT / DEDENT tokens.
//!
//! Rules (as Python's tokenizer): newlines inside `()`, `[]`, `{}` are dropped; blank and
//! comment-only lines are ignored; indentation is counted in spaces and a tab in it is an
//! `IndentationError`; a dedent must return to an earlier level; at end of input a final
//! NEWLINE and the pending DEDENTs are emitted. It also enforces the bracket-depth and
//! block-depth limits and rejects the `match` statement (a soft keyword).

use super::limits::{too_deep, MAX_BLOCK_DEPTH, MAX_EXPR_DEPTH};
use super::token::{Spanned, Tok};
use crate::error::{Error, ErrorKind};
use crate::source::{FileId, Span};

/// What the token stream is: a module (indentation matters) or an expression inside an
/// f-string (as if inside brackets: newlines are insignificant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Module,
    Expr,
}

/// A layout failure; `incomplete` when more input could fix it (an unclosed bracket).
#[derive(Debug)]
pub struct LayoutError {
    pub error: Error,
    pub incomplete: bool,
}

/// The laid-out token stream (starting with a start marker) and whether a block was still
/// open (indented) when the input ended.
#[derive(Debug)]
pub struct Layout {
    pub toks: Vec<Spanned>,
    pub open_block: bool,
}

struct State<'a> {
    src: &'a str,
    file: FileId,
    mode: Mode,
    out: Vec<Spanned>,
    indents: Vec<usize>,
    brackets: Vec<(Tok, usize, usize)>,
    at_line_start: bool,
    unary_run: usize,
}

/// Runs the layout pass over lexed tokens of `src` (the whole file; spans are absolute).
pub fn layout(
    src: &str,
    file: FileId,
    toks: &[Spanned],
    mode: Mode,
    at: usize,
) -> Result<Layout, LayoutError> {
    let marker = match mode {
        Mode::Module => Tok::StartModule,
        Mode::Expr => Tok::StartExpr,
    };
    let mut st = State {
        src,
        file,
        mode,
        out: Vec::with_capacity(toks.len() + 8),
        indents: vec![0],
        brackets: Vec::new(),
        at_line_start: true,
        unary_run: 0,
    };
    st.out.push((at, marker, at));
    for (i, (s, tok, e)) in toks.iter().enumerate() {
        if *tok == Tok::Newline {
            st.newline(*s, *e);
            continue;
        }
        if st.at_line_start && mode == Mode::Module {
            st.indentation(*s, *e)?;
            check_match(toks, i, file)?;
        }
        st.at_line_start = false;
        st.token(*s, tok, *e)?;
    }
    st.finish()
}

impl State<'_> {
    fn err(&self, kind: ErrorKind, msg: impl Into<String>, s: usize, e: usize) -> LayoutError {
        LayoutError {
            error: Error::new(kind, msg, Some(Span::new(self.file, s, e))),
            incomplete: false,
        }
    }

    fn newline(&mut self, s: usize, e: usize) {
        if self.brackets.is_empty() && !self.at_line_start && self.mode == Mode::Module {
            self.out.push((s, Tok::Newline, e));
            self.at_line_start = true;
        }
    }

    /// Emits INDENT/DEDENT for the first token of a logical line, at byte `s`.
    fn indentation(&mut self, s: usize, e: usize) -> Result<(), LayoutError> {
        let before = self.src.get(..s).unwrap_or("");
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let ws = before.get(line_start..).unwrap_or("");
        if let Some(t) = ws.find('\t') {
            let at = line_start + t;
            return Err(self.err(
                ErrorKind::IndentationError,
                "tab in indentation",
                at,
                at + 1,
            ));
        }
        let col = ws.bytes().filter(|&b| b == b' ').count();
        let cur = self.indents.last().copied().unwrap_or(0);
        if col > cur {
            if self.indents.len() > MAX_BLOCK_DEPTH {
                let msg = too_deep(MAX_BLOCK_DEPTH);
                return Err(self.err(ErrorKind::SyntaxError, msg, s, e));
            }
            self.indents.push(col);
            self.out.push((s, Tok::Indent, s));
        }
        while self.indents.last().is_some_and(|&c| c > col) {
            self.indents.pop();
            self.out.push((s, Tok::Dedent, s));
        }
        if self.indents.last() != Some(&col) {
            let msg = "unindent does not match any outer indentation level";
            return Err(self.err(ErrorKind::IndentationError, msg, s, e));
        }
        Ok(())
    }

    fn token(&mut self, s: usize, tok: &Tok, e: usize) -> Result<(), LayoutError> {
        match tok {
            Tok::Lpar | Tok::Lsqb | Tok::Lbrace => {
                if self.brackets.len() >= MAX_EXPR_DEPTH {
                    let msg = too_deep(MAX_EXPR_DEPTH);
                    return Err(self.err(ErrorKind::SyntaxError, msg, s, e));
                }
                self.brackets.push((tok.clone(), s, e));
            }
            Tok::Rpar | Tok::Rsqb | Tok::Rbrace => self.close(s, tok, e)?,
            _ => {}
        }
        self.count_unary(s, tok, e)?;
        self.out.push((s, tok.clone(), e));
        Ok(())
    }

    /// A run of prefix operators nests one level each; reject long runs before the parser
    /// stacks them all up.
    fn count_unary(&mut self, s: usize, tok: &Tok, e: usize) -> Result<(), LayoutError> {
        if matches!(tok, Tok::Minus | Tok::Plus | Tok::Tilde | Tok::Not) {
            self.unary_run += 1;
            if self.unary_run > MAX_EXPR_DEPTH + 1 {
                let msg = too_deep(MAX_EXPR_DEPTH);
                return Err(self.err(ErrorKind::SyntaxError, msg, s, e));
            }
        } else {
            self.unary_run = 0;
        }
        Ok(())
    }

    fn close(&mut self, s: usize, tok: &Tok, e: usize) -> Result<(), LayoutError> {
        let closer = bracket_char(tok);
        let Some((open, _, _)) = self.brackets.pop() else {
            return Err(self.err(
                ErrorKind::SyntaxError,
                format!("unmatched '{closer}'"),
                s,
                e,
            ));
        };
        let expected = match open {
            Tok::Lpar => ')',
            Tok::Lsqb => ']',
            _ => '}',
        };
        if expected != closer {
            let msg = format!(
                "closing parenthesis '{closer}' does not match opening parenthesis '{}'",
                bracket_char(&open)
            );
            return Err(self.err(ErrorKind::SyntaxError, msg, s, e));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Layout, LayoutError> {
        if let Some((open, s, e)) = self.brackets.first().cloned() {
            let msg = format!("'{}' was never closed", bracket_char(&open));
            let mut err = self.err(ErrorKind::SyntaxError, msg, s, e);
            err.incomplete = true;
            return Err(err);
        }
        let end = self.out.last().map_or(0, |t| t.2);
        if !self.at_line_start && self.mode == Mode::Module {
            self.out.push((end, Tok::Newline, end));
        }
        let open_block = self.indents.len() > 1;
        while self.indents.len() > 1 {
            self.indents.pop();
            self.out.push((end, Tok::Dedent, end));
        }
        Ok(Layout {
            toks: self.out,
            open_block,
        })
    }
}

fn bracket_char(t: &Tok) -> char {
    match t {
        Tok::Lpar => '(',
        Tok::Rpar => ')',
        Tok::Lsqb => '[',
        Tok::Rsqb => ']',
        Tok::Lbrace => '{',
        _ => '}',
    }
}

/// `match x:` at the start of a logical line is a match statement (unsupported); `match`
/// used as a name (`match = 1`, `match(x)`) is not, since those lines never end in `:`.
fn check_match(toks: &[Spanned], i: usize, file: FileId) -> Result<(), LayoutError> {
    let Some((s, Tok::Name(n), e)) = toks.get(i) else {
        return Ok(());
    };
    if &**n != "match" {
        return Ok(());
    }
    let next_ok = matches!(
        toks.get(i + 1).map(|t| &t.1),
        Some(Tok::Name(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_) | Tok::Lpar | Tok::Lsqb)
            | Some(Tok::Lbrace | Tok::Minus | Tok::Star | Tok::None | Tok::True | Tok::False)
            | Some(Tok::Not | Tok::Tilde | Tok::Lambda)
    );
    let mut depth = 0i64;
    let mut last = None;
    for (_, t, _) in toks.iter().skip(i + 1) {
        match t {
            Tok::Lpar | Tok::Lsqb | Tok::Lbrace => depth += 1,
            Tok::Rpar | Tok::Rsqb | Tok::Rbrace => depth -= 1,
            Tok::Newline if depth <= 0 => break,
            _ => {}
        }
        last = Some(t);
    }
    if next_ok && last == Some(&Tok::Colon) {
        let span = Span::new(file, *s, *e);
        return Err(LayoutError {
            error: Error::syntax("'match' statements are not supported", span),
            incomplete: false,
        });
    }
    Ok(())
}
