//! String literals: scanning a literal's body after its opening quote, and decoding escapes.

use super::token::{LexError, StrTok, Tok};

/// logos callback for a string opener (`'`, `"`, with an optional `r`/`f`/`u` prefix):
/// scans to the closing quote, handling triple quotes and backslash escapes.
pub fn lex_string(lex: &mut logos::Lexer<Tok>) -> Result<StrTok, LexError> {
    let open = lex.slice();
    let quote = *open.as_bytes().last().ok_or(LexError::Unexpected)?;
    let prefix = open.get(..open.len() - 1).unwrap_or("");
    let raw = prefix.contains(['r', 'R']);
    let fstr = prefix.contains(['f', 'F']);
    let triple = lex.remainder().as_bytes().starts_with(&[quote, quote]);
    if triple {
        lex.bump(2);
    }
    let body_start = lex.span().end;
    let rest = lex.remainder();
    let (body_len, consumed) = match scan_body(rest.as_bytes(), quote, triple) {
        Ok(v) => v,
        Err(stop) => {
            lex.bump(stop);
            return Err(LexError::Unterminated { triple });
        }
    };
    let body = rest.get(..body_len).unwrap_or("");
    lex.bump(consumed);
    if fstr {
        return Ok(StrTok::F {
            start: body_start,
            end: body_start + body_len,
            raw,
        });
    }
    if raw {
        return Ok(StrTok::Plain(body.into()));
    }
    decode_escapes(body)
        .map(|s| StrTok::Plain(s.into()))
        .map_err(LexError::BadEscape)
}

/// Finds the end of a string body: `Ok((body_len, consumed_with_closing_quotes))`, or
/// `Err(bytes_to_skip)` when the literal is unterminated. Only ASCII bytes are compared,
/// so every returned length is a char boundary.
fn scan_body(b: &[u8], quote: u8, triple: bool) -> Result<(usize, usize), usize> {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' if !triple => return Err(i),
            c if c == quote && !triple => return Ok((i, i + 1)),
            c if c == quote && b[i..].starts_with(&[quote, quote, quote]) => {
                return Ok((i, i + 3));
            }
            _ => i += 1,
        }
    }
    Err(b.len())
}

/// Decodes Python escapes: `\n \t \r \0 \\ \' \" \a \b \f \v \ooo \xNN \uNNNN \UNNNNNNNN`
/// and backslash-newline (a line continuation). Unknown escapes keep their backslash.
pub fn decode_escapes(body: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            '\n' => {}
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
            }
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' => out.push(e),
            '0'..='7' => out.push(octal(e, &mut chars)),
            'x' => out.push(hex(
                &mut chars,
                2,
                "(unicode error) truncated \\xXX escape",
            )?),
            'u' => out.push(hex(
                &mut chars,
                4,
                "(unicode error) truncated \\uXXXX escape",
            )?),
            'U' => out.push(hex(
                &mut chars,
                8,
                "(unicode error) truncated \\UXXXXXXXX escape",
            )?),
            'N' => return Err("\\N{...} escapes are not supported"),
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

fn octal(first: char, chars: &mut std::iter::Peekable<std::str::Chars>) -> char {
    let mut v = first.to_digit(8).unwrap_or(0);
    for _ in 0..2 {
        match chars.peek().and_then(|c| c.to_digit(8)) {
            Some(d) => {
                v = v * 8 + d;
                chars.next();
            }
            None => break,
        }
    }
    char::from_u32(v).unwrap_or('\u{fffd}')
}

fn hex(
    chars: &mut std::iter::Peekable<std::str::Chars>,
    n: usize,
    msg: &'static str,
) -> Result<char, &'static str> {
    let mut v: u32 = 0;
    for _ in 0..n {
        let d = chars.next().and_then(|c| c.to_digit(16)).ok_or(msg)?;
        v = v * 16 + d;
    }
    char::from_u32(v).ok_or("(unicode error) illegal Unicode character")
}
