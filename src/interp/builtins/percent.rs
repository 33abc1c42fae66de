//! `"fmt" % args`: printf-style formatting as CPython does it (`%s %r %a %d %i %u %f
//! %F %e %E %g %G %x %X %o %c %%`, flags `-+ #0`, `*` widths/precisions, `%(key)s`).

use crate::error::ErrorKind;
use crate::interp::value::Value;
use crate::interp::{err, type_err, value_err, Interp, R};

/// The arguments: positional items, or a mapping for `%(key)s`.
struct Args<'a> {
    items: Vec<Value>,
    next: usize,
    mapping: Option<&'a Value>,
}

impl Args<'_> {
    fn take(&mut self) -> R<Value> {
        let v = self
            .items
            .get(self.next)
            .cloned()
            .ok_or_else(|| type_err("not enough arguments for format string"))?;
        self.next += 1;
        Ok(v)
    }
}

/// One conversion's flags, width and precision.
#[derive(Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

impl Spec {
    /// The equivalent `format()` spec for `conv` (a `format_spec` type letter).
    fn to_format(&self, conv: char, numeric: bool) -> String {
        let mut s = String::new();
        if self.left {
            s.push('<');
        } else if !numeric {
            s.push('>');
        }
        if numeric {
            if self.plus {
                s.push('+');
            } else if self.space {
                s.push(' ');
            }
            if self.alt {
                s.push('#');
            }
            if self.zero && !self.left {
                s.push('0');
            }
        }
        if let Some(w) = self.width {
            s.push_str(&w.to_string());
        }
        if let Some(p) = self.prec {
            if numeric {
                s.push_str(&format!(".{p}"));
            }
        }
        if numeric {
            s.push(conv);
        }
        s
    }
}

/// `*` or a decimal number in a spec.
fn number(me: &mut Args, chars: &mut std::iter::Peekable<std::str::CharIndices>) -> R<Option<i64>> {
    if let Some((_, '*')) = chars.peek() {
        chars.next();
        return match me.take()? {
            Value::Int(i) => Ok(Some(i)),
            Value::Bool(b) => Ok(Some(b as i64)),
            _ => Err(type_err("* wants int")),
        };
    }
    let mut n: Option<i64> = None;
    while let Some(&(_, c)) = chars.peek() {
        let Some(d) = c.to_digit(10) else { break };
        chars.next();
        n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as i64));
    }
    Ok(n)
}

impl Interp {
    /// `fmt % args`.
    pub fn percent_format(&mut self, fmt: &str, args: &Value) -> R<Value> {
        let is_map = matches!(args, Value::Dict(_));
        let mut a = Args {
            items: match args {
                Value::Tuple(t) | Value::Size(t) => t.to_vec(),
                other => vec![other.clone()],
            },
            next: 0,
            mapping: is_map.then_some(args),
        };
        let mut out = String::new();
        let mut chars = fmt.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let mut arg: Option<Value> = None;
            if let Some((_, '(')) = chars.peek() {
                chars.next();
                let mut key = String::new();
                let mut depth = 1;
                loop {
                    match chars.next() {
                        Some((_, '(')) => {
                            depth += 1;
                            key.push('(');
                        }
                        Some((_, ')')) => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                            key.push(')');
                        }
                        Some((_, ch)) => key.push(ch),
                        None => return Err(value_err("incomplete format key")),
                    }
                }
                let Some(m) = a.mapping else {
                    return Err(type_err("format requires a mapping"));
                };
                arg = Some(self.get_item(m, &Value::str(&key))?);
            }
            let mut sp = Spec::default();
            while let Some(&(_, f)) = chars.peek() {
                match f {
                    '-' => sp.left = true,
                    '0' => sp.zero = true,
                    '+' => sp.plus = true,
                    ' ' => sp.space = true,
                    '#' => sp.alt = true,
                    _ => break,
                }
                chars.next();
            }
            if let Some(w) = number(&mut a, &mut chars)? {
                if w < 0 {
                    sp.left = true;
                }
                sp.width = Some(w.unsigned_abs() as usize);
            }
            if let Some((_, '.')) = chars.peek() {
                chars.next();
                sp.prec = Some(number(&mut a, &mut chars)?.unwrap_or(0).max(0) as usize);
            }
            while let Some((_, 'h' | 'l' | 'L')) = chars.peek() {
                chars.next();
            }
            let Some((at, conv)) = chars.next() else {
                return Err(value_err("incomplete format"));
            };
            if conv == '%' {
                out.push('%');
                continue;
            }
            let valid = "sradiufFeEgGxXoc";
            if !valid.contains(conv) {
                return Err(value_err(format!(
                    "unsupported format character '{conv}' (0x{:x}) at index {at}",
                    conv as u32
                )));
            }
            let v = match arg {
                Some(v) => v,
                None => a.take()?,
            };
            let text = self.convert_one(conv, &sp, v)?;
            out.push_str(&text);
        }
        if a.mapping.is_none() && a.next < a.items.len() {
            return Err(type_err(
                "not all arguments converted during string formatting",
            ));
        }
        Ok(Value::str(&out))
    }

    fn convert_one(&mut self, conv: char, sp: &Spec, v: Value) -> R<String> {
        let text = match conv {
            's' | 'r' | 'a' => {
                let mut s = match conv {
                    's' => self.str_of(&v)?,
                    'r' => self.repr(&v)?,
                    _ => crate::pyfmt::ascii_escape(&self.repr(&v)?),
                };
                if let Some(p) = sp.prec {
                    s = s.chars().take(p).collect();
                }
                s
            }
            'c' => match &v {
                Value::Int(i) => match u32::try_from(*i).ok().and_then(char::from_u32) {
                    Some(c) => c.to_string(),
                    None => {
                        return Err(err(
                            ErrorKind::OverflowError,
                            "%c arg not in range(0x110000)",
                        ))
                    }
                },
                Value::Str(s) if s.chars().count() == 1 => s.to_string(),
                _ => return Err(type_err("%c requires int or char")),
            },
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                let n = match &v {
                    Value::Int(_) => v.clone(),
                    Value::Bool(b) => Value::Int(*b as i64),
                    Value::Float(f) if matches!(conv, 'd' | 'i' | 'u') => {
                        if !f.is_finite() {
                            return Err(err(
                                ErrorKind::OverflowError,
                                "cannot convert float infinity to integer",
                            ));
                        }
                        Value::Int(f.trunc() as i64)
                    }
                    other => {
                        let what = if matches!(conv, 'd' | 'i' | 'u') {
                            "a real number"
                        } else {
                            "an integer"
                        };
                        return Err(type_err(format!(
                            "%{conv} format: {what} is required, not {}",
                            other.type_name()
                        )));
                    }
                };
                let letter = if matches!(conv, 'i' | 'u') { 'd' } else { conv };
                let mut sp2 = Spec { prec: None, ..*sp };
                if sp.prec.is_some() {
                    sp2.zero = false;
                }
                let body = self.format_spec(&n, &sp2.to_format(letter, true))?;
                // `%.3d`: at least that many digits
                match sp.prec {
                    Some(p) => {
                        crate::interp::containers::check_len(p, "str")?;
                        min_digits(&body, p, sp)
                    }
                    None => body,
                }
            }
            _ => {
                let f = match &v {
                    Value::Float(f) => *f,
                    Value::Int(i) => *i as f64,
                    Value::Bool(b) => *b as i64 as f64,
                    other => {
                        return Err(type_err(format!(
                            "must be real number, not {}",
                            other.type_name()
                        )))
                    }
                };
                let sp2 = Spec {
                    prec: Some(sp.prec.unwrap_or(6)),
                    ..*sp
                };
                return self.format_spec(&Value::Float(f), &sp2.to_format(conv, true));
            }
        };
        if matches!(conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o') {
            return Ok(text);
        }
        self.format_spec(&Value::str(&text), &sp.to_format('s', false))
    }
}

/// Pads the digits of an integer rendering to `p` places (`"%.3d" % 5 == "005"`), then
/// re-applies the width.
fn min_digits(body: &str, p: usize, sp: &Spec) -> String {
    let t = body.trim();
    let (sign, rest) = match t.chars().next() {
        Some(c @ ('-' | '+' | ' ')) => (c.to_string(), &t[1..]),
        _ => (String::new(), t),
    };
    let (prefix, digits) = match rest.get(..2) {
        Some("0x" | "0X" | "0o") => (&rest[..2], &rest[2..]),
        _ => ("", rest),
    };
    let mut s = format!(
        "{sign}{prefix}{}{digits}",
        "0".repeat(p.saturating_sub(digits.len()))
    );
    let w = sp.width.unwrap_or(0);
    let n = s.chars().count();
    if n < w {
        let fill = " ".repeat(w - n);
        s = if sp.left { s + &fill } else { fill + &s };
    }
    s
}
