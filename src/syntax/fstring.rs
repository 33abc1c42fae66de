//! String literal concatenation and f-strings: splitting an f-string body into literal text
//! and `{expr!conv:spec}` fields, whose expressions are parsed with the same grammar and
//! keep their byte positions in the file.

use super::actions::{Cx, Node, PResult};
use super::ast::{ExprKind, FPart};
use super::limits::{too_deep, MAX_FSTRING_DEPTH};
use super::parse::parse_expr;
use super::strings::decode_escapes;
use super::token::StrTok;
use lalrpop_util::ParseError;

/// How deeply format specs may nest fields (`{x:>{width}}` is one level), as in Python.
const MAX_SPEC_NESTING: u32 = 2;

/// Parts being collected, with adjacent literal text merged.
#[derive(Default)]
struct Parts {
    parts: Vec<FPart>,
    lit: String,
    d: usize,
}

impl Parts {
    fn flush(&mut self) {
        if !self.lit.is_empty() {
            let text = std::mem::take(&mut self.lit);
            self.parts.push(FPart::Lit(text.into()));
        }
    }

    fn finish(mut self) -> (Vec<FPart>, usize) {
        self.flush();
        (self.parts, self.d)
    }
}

impl Cx<'_> {
    /// Adjacent string literals (`"a" f"{b}" 'c'`): a `Str`, or an `FString` if any part is
    /// an f-string.
    pub fn strings(&self, toks: Vec<StrTok>, l: usize, r: usize) -> PResult<Node> {
        let span = self.span(l, r);
        if toks.iter().all(|t| matches!(t, StrTok::Plain(_))) {
            let mut s = String::new();
            for t in &toks {
                if let StrTok::Plain(p) = t {
                    s.push_str(p);
                }
            }
            return Ok(self.leaf(ExprKind::Str(s.into()), l, r));
        }
        let mut out = Parts::default();
        for t in toks {
            match t {
                StrTok::Plain(p) => out.lit.push_str(&p),
                StrTok::F { start, end, raw } => self.fbody(&mut out, start, end, raw, 0)?,
            }
        }
        let (parts, d) = out.finish();
        self.node(ExprKind::FString(parts), span, d)
    }

    /// Splits `src[start..end]` (an f-string body or a format spec) into `out`.
    fn fbody(
        &self,
        out: &mut Parts,
        start: usize,
        end: usize,
        raw: bool,
        nest: u32,
    ) -> PResult<()> {
        let body = self.src.get(start..end).unwrap_or("");
        let mut raw_lit = String::new();
        let mut it = body.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            let next = it.peek().map(|p| p.1);
            match c {
                '{' if next == Some('{') => {
                    it.next();
                    raw_lit.push('{');
                }
                '}' if next == Some('}') => {
                    it.next();
                    raw_lit.push('}');
                }
                '}' => {
                    let at = start + i;
                    return self.err("f-string: single '}' is not allowed", at, at + 1);
                }
                '{' => {
                    self.push_lit(out, &raw_lit, raw, start, end)?;
                    raw_lit.clear();
                    let stop = self.field(out, start + i + 1, end, raw, nest)?;
                    while it.peek().is_some_and(|p| start + p.0 < stop) {
                        it.next();
                    }
                }
                '\\' if !raw => {
                    raw_lit.push('\\');
                    if let Some((_, n)) = it.next() {
                        raw_lit.push(n);
                    }
                }
                c => raw_lit.push(c),
            }
        }
        self.push_lit(out, &raw_lit, raw, start, end)
    }

    fn push_lit(&self, out: &mut Parts, text: &str, raw: bool, l: usize, r: usize) -> PResult<()> {
        if raw {
            out.lit.push_str(text);
            return Ok(());
        }
        match decode_escapes(text) {
            Ok(s) => {
                out.lit.push_str(&s);
                Ok(())
            }
            Err(msg) => self.err(msg, l, r),
        }
    }

    /// Parses one `{...}` field starting at `p` (just after the `{`); returns the offset just
    /// after its closing `}`.
    fn field(&self, out: &mut Parts, p: usize, end: usize, raw: bool, nest: u32) -> PResult<usize> {
        if nest >= MAX_SPEC_NESTING {
            return self.err("f-string: expressions nested too deeply", p - 1, p);
        }
        let text = self.src.get(p..end).unwrap_or("");
        let Some(stop) = expr_end(text) else {
            return self.err("f-string: expecting '}'", p - 1, end);
        };
        let (mut expr_stop, mut debug) = (p + stop, false);
        let trimmed = text.get(..stop).unwrap_or("").trim_end();
        if is_debug(trimmed) {
            debug = true;
            expr_stop = p + trimmed.len() - 1;
        }
        let expr = self.field_expr(p, expr_stop)?;
        if debug {
            out.lit.push_str(self.src.get(p..p + stop).unwrap_or(""));
        }
        let rest = text.get(stop..).unwrap_or("");
        let (conv, after_conv) = self.conversion(rest, p + stop)?;
        let mut spec = Parts::default();
        let mut q = after_conv;
        let tail = self.src.get(q..end).unwrap_or("");
        if let Some(spec_text) = tail.strip_prefix(':') {
            let Some(spec_len) = spec_end(spec_text) else {
                return self.err("f-string: expecting '}'", p - 1, end);
            };
            self.fbody(&mut spec, q + 1, q + 1 + spec_len, raw, nest + 1)?;
            q = q + 1 + spec_len;
        }
        if self.src.get(q..q + 1) != Some("}") {
            return self.err("f-string: expecting '}'", p - 1, q.min(end));
        }
        let conv = conv.or((debug && spec.parts.is_empty() && spec.lit.is_empty()).then_some('r'));
        out.flush();
        out.d = out.d.max(expr.d).max(spec.d);
        let (spec, _) = spec.finish();
        out.parts.push(FPart::Expr {
            expr: Box::new(expr.e),
            conv,
            spec,
        });
        Ok(q + 1)
    }

    fn field_expr(&self, p: usize, stop: usize) -> PResult<Node> {
        let text = self.src.get(p..stop).unwrap_or("");
        if text.trim().is_empty() {
            return self.err(
                "f-string: empty expression not allowed",
                p.saturating_sub(1),
                stop + 1,
            );
        }
        if self.fdepth + 1 >= MAX_FSTRING_DEPTH {
            return self.err(too_deep(MAX_FSTRING_DEPTH as usize), p, stop);
        }
        parse_expr(self.src, self.file, p, stop, self.fdepth + 1)
            .map_err(|error| ParseError::User { error })
    }

    /// `!r` / `!s` / `!a` after the expression; returns the conversion and the next offset.
    fn conversion(&self, rest: &str, at: usize) -> PResult<(Option<char>, usize)> {
        let Some(after) = rest.strip_prefix('!') else {
            return Ok((None, at));
        };
        match after.chars().next() {
            Some(c @ ('r' | 's' | 'a')) => Ok((Some(c), at + 2)),
            _ => self.err(
                "f-string: invalid conversion character: expected 's', 'r', or 'a'",
                at,
                at + 1,
            ),
        }
    }
}

/// The end of a field's expression in `text`: the first `}`, `:` or `!` (not `!=`) outside
/// brackets and string literals.
fn expr_end(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            b':' if depth == 0 => return Some(i),
            b'!' if depth == 0 && b.get(i + 1) != Some(&b'=') => return Some(i),
            q @ (b'\'' | b'"') => {
                let close = b[i + 1..].iter().position(|&c| c == q)?;
                i += close + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The length of a format spec in `text`: up to the `}` that closes the field, skipping
/// nested `{...}` fields.
fn spec_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `{x=}`: a self-documenting field (but not `{a == b}`, `{a != b}`, `{a <= b}`, ...).
fn is_debug(expr: &str) -> bool {
    expr.ends_with('=') && !["==", "!=", "<=", ">="].iter().any(|op| expr.ends_with(op))
}
