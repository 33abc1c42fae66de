//! Syntax coloring of one input line: keywords, strings, numbers and comments.

/// Kiln's keywords (also offered by completion).
pub const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with",
];

const KEYWORD: &str = "\x1b[1;35m";
const STRING: &str = "\x1b[32m";
const NUMBER: &str = "\x1b[36m";
const COMMENT: &str = "\x1b[90m";
const RESET: &str = "\x1b[0m";

/// The line with ANSI colors around keywords, string literals, numbers and comments. The
/// visible text is unchanged. A line is colored on its own: a continuation line inside a
/// triple-quoted string is not known to be string text.
pub fn highlight(line: &str) -> String {
    let mut out = String::with_capacity(line.len() * 2);
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let (len, color) = token(rest, c);
        let (tok, tail) = rest.split_at(len.clamp(c.len_utf8(), rest.len()));
        match color {
            Some(code) => {
                out.push_str(code);
                out.push_str(tok);
                out.push_str(RESET);
            }
            None => out.push_str(tok),
        }
        rest = tail;
    }
    out
}

/// The byte length of the token at the start of `s` (first char `c`) and its color.
fn token(s: &str, c: char) -> (usize, Option<&'static str>) {
    if c == '#' {
        return (s.len(), Some(COMMENT));
    }
    if c == '"' || c == '\'' {
        return (string_len(s), Some(STRING));
    }
    if c.is_ascii_digit() || (c == '.' && s[1..].starts_with(|d: char| d.is_ascii_digit())) {
        return (number_len(s), Some(NUMBER));
    }
    if c.is_alphabetic() || c == '_' {
        let n = s
            .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .unwrap_or(s.len());
        let word = &s[..n];
        if is_string_prefix(word) && s[n..].starts_with(['"', '\'']) {
            return (n + string_len(&s[n..]), Some(STRING));
        }
        return (n, KEYWORDS.contains(&word).then_some(KEYWORD));
    }
    (c.len_utf8(), None)
}

fn is_string_prefix(w: &str) -> bool {
    matches!(
        w.to_ascii_lowercase().as_str(),
        "f" | "r" | "b" | "rb" | "br" | "fr" | "rf"
    )
}

/// The length of a string literal starting at a quote, up to its closing quote or the end
/// of the line when it is not closed there.
fn string_len(s: &str) -> usize {
    let q = if s.starts_with('"') { '"' } else { '\'' };
    let triple: String = [q, q, q].iter().collect();
    if s.starts_with(&triple) {
        return s[3..].find(&triple).map_or(s.len(), |i| i + 6);
    }
    let mut escaped = false;
    for (i, ch) in s.char_indices().skip(1) {
        match ch {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            _ if ch == q => return i + 1,
            _ => {}
        }
    }
    s.len()
}

/// The length of a numeric literal: digits, letters (hex digits, exponents, `_`), dots,
/// and a sign right after an exponent `e`.
fn number_len(s: &str) -> usize {
    let mut prev = ' ';
    for (i, ch) in s.char_indices() {
        let sign_after_exp =
            matches!(ch, '+' | '-') && matches!(prev, 'e' | 'E') && !s.starts_with("0x");
        if !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.' || sign_after_exp) {
            return i;
        }
        prev = ch;
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(s: &str) -> String {
        let mut out = String::new();
        let mut in_esc = false;
        for c in s.chars() {
            match c {
                '\x1b' => in_esc = true,
                'm' if in_esc => in_esc = false,
                _ if in_esc => {}
                _ => out.push(c),
            }
        }
        out
    }

    #[test]
    fn colors_keywords_strings_numbers_comments() {
        let line = "def f(x): return x + 1.5e-3 # done";
        let h = highlight(line);
        assert!(h.starts_with("\x1b[1;35mdef\x1b[0m f(x): \x1b[1;35mreturn\x1b[0m x + "));
        assert!(h.contains("\x1b[36m1.5e-3\x1b[0m"));
        assert!(h.ends_with("\x1b[90m# done\x1b[0m"));
        assert_eq!(strip(&h), line);
    }

    #[test]
    fn strings_with_escapes_prefixes_and_unclosed() {
        let h = highlight(r#"s = f"a\"b" + 'c' + "open"#);
        assert!(h.contains("\x1b[32mf\"a\\\"b\"\x1b[0m"));
        assert!(h.contains("\x1b[32m'c'\x1b[0m"));
        assert!(h.ends_with("\x1b[32m\"open\x1b[0m"));
        let t = highlight("x = '''a 'b' c''' if y else z");
        assert!(t.contains("\x1b[32m'''a 'b' c'''\x1b[0m \x1b[1;35mif\x1b[0m"));
    }

    #[test]
    fn identifiers_containing_keywords_stay_plain() {
        assert_eq!(highlight("definite = iffy"), "definite = iffy");
        assert_eq!(highlight("x2 = é + ü"), "x2 = é + ü");
    }

    #[test]
    fn any_text_round_trips() {
        for line in [
            "\"", "'''", "0x1f-2", ".5", "a.b.c", "# only", "1e", "¿ß?", "\\",
        ] {
            assert_eq!(strip(&highlight(line)), line);
        }
    }
}
