//! Methods of `str`.

use super::arity;
use super::convert::int_arg;
use crate::interp::containers;
use crate::interp::value::Value;
use crate::interp::{type_err, value_err, Interp, R};
use std::rc::Rc;

pub const STR_METHODS: &[&str] = &[
    "split",
    "join",
    "strip",
    "lstrip",
    "rstrip",
    "replace",
    "startswith",
    "endswith",
    "upper",
    "lower",
    "find",
    "rfind",
    "index",
    "count",
    "format",
    "isdigit",
    "isalpha",
    "isalnum",
    "isspace",
    "isupper",
    "islower",
    "title",
    "capitalize",
    "zfill",
    "center",
    "ljust",
    "rjust",
    "splitlines",
    "rindex",
    "rsplit",
    "partition",
    "rpartition",
    "swapcase",
    "casefold",
    "expandtabs",
    "isdecimal",
    "isnumeric",
    "isidentifier",
    "isprintable",
    "isascii",
    "istitle",
    "removeprefix",
    "removesuffix",
    "translate",
    "format_map",
];

/// `v` as a str, or CPython's "NAME() argument must be str" TypeError.
pub(super) fn str_arg<'a>(v: &'a Value, fname: &str) -> R<&'a str> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(type_err(format!(
            "{}() argument must be str, not {}",
            fname,
            other.type_name()
        ))),
    }
}

fn strip_chars<'a>(s: &'a str, args: &[Value], fname: &str, left: bool, right: bool) -> R<&'a str> {
    arity(fname, args, 0, 1)?;
    let set: Option<Vec<char>> = match args.first() {
        None | Some(Value::None) => None,
        Some(v) => Some(str_arg(v, fname)?.chars().collect()),
    };
    let pred = |c: char| match &set {
        Some(cs) => cs.contains(&c),
        None => c.is_whitespace(),
    };
    let mut t = s;
    if left {
        t = t.trim_start_matches(pred);
    }
    if right {
        t = t.trim_end_matches(pred);
    }
    Ok(t)
}

fn pad(s: &str, args: &[Value], fname: &str, align: char) -> R<Value> {
    arity(fname, args, 1, 2)?;
    let width = int_arg(&args[0], "")?.max(0) as usize;
    let fill = match args.get(1) {
        Some(v) => {
            let f = str_arg(v, fname)?;
            let mut it = f.chars();
            match (it.next(), it.next()) {
                (Some(c), None) => c,
                _ => {
                    return Err(type_err(
                        "The fill character must be exactly one character long",
                    ))
                }
            }
        }
        None => ' ',
    };
    let n = s.chars().count();
    if width <= n {
        return Ok(Value::str(s));
    }
    let total = width - n;
    let (l, r) = match align {
        '<' => (0, total),
        '>' => (total, 0),
        _ => {
            let l = total / 2 + (total & width & 1);
            (l, total - l)
        }
    };
    let mut out = containers::string_with_capacity(width.saturating_mul(fill.len_utf8()))?;
    out.extend(std::iter::repeat_n(fill, l));
    out.push_str(s);
    out.extend(std::iter::repeat_n(fill, r));
    Ok(Value::str(&out))
}

/// `MemoryError` when replacing every `a` in `s` by `b` could pass the container cap.
fn check_replace_len(s: &str, a: &str, b: &str) -> R<()> {
    if b.len() <= a.len() {
        return Ok(());
    }
    let hits = if a.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(a).count()
    };
    let grown = hits.saturating_mul(b.len() - a.len());
    containers::check_len(s.len().saturating_add(grown), "str")
}

pub fn str_method(
    me: &mut Interp,
    s: &Rc<str>,
    name: &str,
    args: &[Value],
    kw: &[(Rc<str>, Value)],
) -> R<Value> {
    if !matches!(
        name,
        "format" | "split" | "rsplit" | "splitlines" | "expandtabs"
    ) && !kw.is_empty()
    {
        return Err(type_err(format!("{name}() takes no keyword arguments")));
    }
    Ok(match name {
        "split" => {
            let sep = args.first().or_else(|| super::kwarg(kw, "sep"));
            let maxsplit = match args.get(1).or_else(|| super::kwarg(kw, "maxsplit")) {
                Some(v) => int_arg(v, "")?,
                None => -1,
            };
            let parts: Vec<Value> = match sep {
                None | Some(Value::None) => {
                    let mut out = Vec::new();
                    let mut rest = s.trim_start();
                    while !rest.is_empty() {
                        if maxsplit >= 0 && out.len() as i64 == maxsplit {
                            out.push(Value::str(rest));
                            break;
                        }
                        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                        out.push(Value::str(&rest[..end]));
                        rest = rest[end..].trim_start();
                    }
                    out
                }
                Some(v) => {
                    let sep = str_arg(v, "split")?;
                    if sep.is_empty() {
                        return Err(value_err("empty separator"));
                    }
                    if maxsplit >= 0 {
                        s.splitn(maxsplit as usize + 1, sep)
                            .map(Value::str)
                            .collect()
                    } else {
                        s.split(sep).map(Value::str).collect()
                    }
                }
            };
            Value::list(parts)
        }
        "splitlines" => {
            arity(name, args, 0, 1)?;
            let keep = args.first().or_else(|| super::kwarg(kw, "keepends"));
            let keep = match keep {
                Some(v) => me.truthy(v)?,
                None => false,
            };
            Value::list(super::strmethods::splitlines(s, keep))
        }
        "join" => {
            arity("join", args, 1, 1)?;
            let items = me.collect(&args[0])?;
            let mut out = String::new();
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    containers::push_str(&mut out, s)?;
                }
                match x {
                    Value::Str(t) => containers::push_str(&mut out, t)?,
                    other => {
                        return Err(type_err(format!(
                            "sequence item {}: expected str instance, {} found",
                            i,
                            other.type_name()
                        )))
                    }
                }
            }
            Value::str(&out)
        }
        "strip" => Value::str(strip_chars(s, args, name, true, true)?),
        "lstrip" => Value::str(strip_chars(s, args, name, true, false)?),
        "rstrip" => Value::str(strip_chars(s, args, name, false, true)?),
        "replace" => {
            arity("replace", args, 2, 3)?;
            let (a, b) = (str_arg(&args[0], name)?, str_arg(&args[1], name)?);
            // nothing to replace (the common case: escaping text without those
            // characters): the string itself, after one search and no copy
            if !a.is_empty() && !super::strmethods::contains_sub(s, a) {
                if let Some(n) = args.get(2) {
                    int_arg(n, "")?;
                }
                return Ok(Value::Str(s.clone()));
            }
            check_replace_len(s, a, b)?;
            match args.get(2) {
                Some(n) => {
                    let n = int_arg(n, "")?;
                    if n < 0 {
                        Value::str(&s.replace(a, b))
                    } else {
                        Value::str(&s.replacen(a, b, n as usize))
                    }
                }
                None => Value::str(&s.replace(a, b)),
            }
        }
        "upper" => Value::str(&s.to_uppercase()),
        "lower" => Value::str(&s.to_lowercase()),
        "title" => {
            let mut out = String::with_capacity(s.len());
            let mut prev_alpha = false;
            for c in s.chars() {
                if prev_alpha {
                    out.extend(c.to_lowercase());
                } else {
                    out.extend(c.to_uppercase());
                }
                prev_alpha = c.is_alphabetic();
            }
            Value::str(&out)
        }
        "capitalize" => {
            let mut cs = s.chars();
            let out: String = match cs.next() {
                Some(c) => c
                    .to_uppercase()
                    .chain(cs.flat_map(|c| c.to_lowercase()))
                    .collect(),
                None => String::new(),
            };
            Value::str(&out)
        }
        "find" | "rfind" | "index" | "count" | "startswith" | "endswith" => {
            super::strmethods::search(s, name, args)?
        }
        "format" => Value::str(&super::strformat::format_with(me, s, args, kw, None)?),
        "isdigit" => Value::Bool(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())),
        "isalpha" => Value::Bool(!s.is_empty() && s.chars().all(char::is_alphabetic)),
        "isalnum" => Value::Bool(!s.is_empty() && s.chars().all(char::is_alphanumeric)),
        "isspace" => Value::Bool(!s.is_empty() && s.chars().all(char::is_whitespace)),
        "isupper" => {
            Value::Bool(s.chars().any(char::is_uppercase) && !s.chars().any(char::is_lowercase))
        }
        "islower" => {
            Value::Bool(s.chars().any(char::is_lowercase) && !s.chars().any(char::is_uppercase))
        }
        "zfill" => {
            arity(name, args, 1, 1)?;
            let w = int_arg(&args[0], "")?.max(0) as usize;
            let n = s.chars().count();
            containers::check_len(w, "str")?;
            if n >= w {
                Value::str(s)
            } else {
                let (sign, rest) = match s.chars().next() {
                    Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                    _ => (String::new(), &s[..]),
                };
                Value::str(&format!("{}{}{}", sign, "0".repeat(w - n), rest))
            }
        }
        "center" => pad(s, args, name, '^')?,
        "ljust" => pad(s, args, name, '<')?,
        "rjust" => pad(s, args, name, '>')?,
        _ => match super::strmethods::str_method_more(me, s, name, args, kw)? {
            Some(v) => v,
            None => {
                return Err(crate::interp::err(
                    crate::error::ErrorKind::AttributeError,
                    format!("'str' object has no attribute '{name}'"),
                ))
            }
        },
    })
}
