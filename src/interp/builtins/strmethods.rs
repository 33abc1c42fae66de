//! More methods of `str`: searching with `start`/`end`, partitioning, case and
//! classification predicates, `splitlines`/`expandtabs`/`translate`, following CPython.

use super::arity;
use super::convert::int_arg;
use super::methods::str_arg;
use crate::interp::strindex::Layout;
use crate::interp::value::{Key, Value};
use crate::interp::{containers, type_err, value_err, Interp, R};
use std::rc::Rc;

/// One `start`/`end` argument of the search methods (None means absent).
fn opt_index(v: Option<&Value>) -> R<Option<i64>> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => int_arg(v, "").map(Some).map_err(|_| {
            type_err("slice indices must be integers or None or have an __index__ method")
        }),
    }
}

/// CPython's `ADJUST_INDICES` on character positions, then byte offsets of the window;
/// `None` when the window is empty because `start > end` (nothing can match, not even "").
pub fn window(
    s: &str,
    layout: &Layout,
    start: Option<&Value>,
    end: Option<&Value>,
) -> R<Option<(usize, usize)>> {
    // positions through the layout: O(1) per call once a long string is measured
    let n = layout.as_ref().map_or(s.len(), |ends| ends.len() - 1) as i64;
    let fix = |i: i64| if i < 0 { (i + n).max(0) } else { i.min(n) };
    let a = opt_index(start)?.map_or(0, fix);
    let b = opt_index(end)?.map_or(n, fix);
    if opt_index(start)?.is_some_and(|i| i > n) || a > b {
        return Ok(None);
    }
    let byte = |c: i64| layout.as_ref().map_or(c as usize, |ends| ends[c as usize]);
    Ok(Some((byte(a), byte(b))))
}

/// The character position of the character starting at `byte`.
fn char_index(layout: &Layout, byte: usize) -> i64 {
    match layout {
        None => byte as i64,
        Some(ends) => ends.partition_point(|&e| e < byte) as i64,
    }
}

/// A one-byte needle (an ASCII character) as a `char` pattern: searched with `memchr`,
/// not through the two-way searcher the `&str` pattern sets up at every call.
fn one_byte(sub: &str) -> Option<char> {
    match sub.as_bytes() {
        [b] => Some(char::from(*b)),
        _ => None,
    }
}

/// The byte offset of the first (`rev`: last) occurrence of `sub` in `hay`.
fn find_sub(hay: &str, sub: &str, rev: bool) -> Option<usize> {
    match (one_byte(sub), rev) {
        (Some(c), false) => hay.find(c),
        (Some(c), true) => hay.rfind(c),
        (None, false) => hay.find(sub),
        (None, true) => hay.rfind(sub),
    }
}

/// True when `sub` occurs in `hay` (`sub in hay`).
pub fn contains_sub(hay: &str, sub: &str) -> bool {
    match one_byte(sub) {
        Some(c) => hay.as_bytes().contains(&(c as u8)),
        None => hay.contains(sub),
    }
}

/// The number of non-overlapping occurrences of a non-empty `sub` in `hay`.
fn count_sub(hay: &str, sub: &str) -> usize {
    match one_byte(sub) {
        Some(c) => hay.bytes().filter(|&b| b == c as u8).count(),
        None => hay.matches(sub).count(),
    }
}

/// `find`, `rfind`, `index`, `rindex`, `count`, `startswith`, `endswith`.
pub fn search(s: &Rc<str>, name: &str, args: &[Value]) -> R<Value> {
    arity(name, args, 1, 3)?;
    let layout = crate::interp::strindex::layout(s);
    let win = window(s, &layout, args.get(1), args.get(2))?;
    if matches!(name, "startswith" | "endswith") {
        let test = |p: &str| match win {
            Some((a, b)) if name == "startswith" => s[a..b].starts_with(p),
            Some((a, b)) => s[a..b].ends_with(p),
            None => false,
        };
        let bad = |v: &Value| {
            type_err(format!(
                "{name} first arg must be str or a tuple of str, not {}",
                v.type_name()
            ))
        };
        return Ok(Value::Bool(match &args[0] {
            Value::Tuple(ts) => {
                let mut r = false;
                for t in ts.iter() {
                    let Value::Str(p) = t else {
                        return Err(type_err(format!(
                            "tuple for {name} must only contain str, not {}",
                            t.type_name()
                        )));
                    };
                    r |= test(p);
                }
                r
            }
            Value::Str(p) => test(p),
            v => return Err(bad(v)),
        }));
    }
    let sub = match &args[0] {
        Value::Str(p) => &**p,
        v => return Err(type_err(format!("must be str, not {}", v.type_name()))),
    };
    if name == "count" {
        return Ok(Value::Int(match win {
            None => 0,
            Some((a, b)) if sub.is_empty() => s[a..b].chars().count() as i64 + 1,
            Some((a, b)) => count_sub(&s[a..b], sub) as i64,
        }));
    }
    let pos = win.and_then(|(a, b)| {
        find_sub(&s[a..b], sub, name.starts_with('r')).map(|p| char_index(&layout, a + p))
    });
    match (pos, name) {
        (Some(i), _) => Ok(Value::Int(i)),
        (None, "index" | "rindex") => Err(value_err("substring not found")),
        (None, _) => Ok(Value::Int(-1)),
    }
}

/// Python's line boundaries (`str.splitlines`).
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\x0b'
            | '\x0c'
            | '\x1c'
            | '\x1d'
            | '\x1e'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// `str.splitlines(keepends=False)`.
pub fn splitlines(s: &str, keepends: bool) -> Vec<Value> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if !is_line_break(c) {
            continue;
        }
        let mut end = i + c.len_utf8();
        if c == '\r' {
            if let Some((_, '\n')) = it.peek() {
                it.next();
                end += 1;
            }
        }
        out.push(Value::str(&s[start..if keepends { end } else { i }]));
        start = end;
    }
    if start < s.len() {
        out.push(Value::str(&s[start..]));
    }
    out
}

/// `str.rsplit(sep=None, maxsplit=-1)`.
fn rsplit(s: &str, sep: Option<&Value>, maxsplit: i64) -> R<Value> {
    let mut parts: Vec<Value> = Vec::new();
    match sep {
        None | Some(Value::None) => {
            let mut rest = s.trim_end();
            while !rest.is_empty() {
                if maxsplit >= 0 && parts.len() as i64 == maxsplit {
                    parts.push(Value::str(rest));
                    break;
                }
                let start = rest.rfind(char::is_whitespace).map_or(0, |i| {
                    i + rest[i..].chars().next().map_or(1, char::len_utf8)
                });
                parts.push(Value::str(&rest[start..]));
                rest = rest[..start].trim_end();
            }
        }
        Some(v) => {
            let sep = str_arg(v, "rsplit")?;
            if sep.is_empty() {
                return Err(value_err("empty separator"));
            }
            if maxsplit >= 0 {
                parts = s
                    .rsplitn(maxsplit as usize + 1, sep)
                    .map(Value::str)
                    .collect();
            } else {
                parts = s.rsplit(sep).map(Value::str).collect();
            }
        }
    }
    parts.reverse();
    Ok(Value::list(parts))
}

/// `str.istitle()`: uppercase characters only after uncased ones, lowercase only after
/// cased ones, and at least one cased character.
fn istitle(s: &str) -> bool {
    let (mut prev_cased, mut any) = (false, false);
    for c in s.chars() {
        if c.is_uppercase() {
            if prev_cased {
                return false;
            }
            prev_cased = true;
            any = true;
        } else if c.is_lowercase() {
            if !prev_cased {
                return false;
            }
            prev_cased = true;
            any = true;
        } else {
            prev_cased = false;
        }
    }
    any
}

fn isidentifier(s: &str) -> bool {
    let mut cs = s.chars();
    match cs.next() {
        Some(c) if c == '_' || c.is_alphabetic() => cs.all(|c| c == '_' || c.is_alphanumeric()),
        _ => false,
    }
}

/// `str.expandtabs(tabsize=8)`.
fn expandtabs(s: &str, size: i64) -> R<String> {
    let mut out = String::new();
    let mut col: i64 = 0;
    for c in s.chars() {
        match c {
            '\t' => {
                if size > 0 {
                    let n = size - col % size;
                    containers::check_len(out.len().saturating_add(n as usize), "str")?;
                    out.extend(std::iter::repeat_n(' ', n as usize));
                    col += n;
                }
            }
            '\n' | '\r' => {
                out.push(c);
                col = 0;
            }
            c => {
                out.push(c);
                col += 1;
            }
        }
    }
    Ok(out)
}

/// `str.translate(table)`: each character looked up by its code point; a missing entry
/// keeps it, None deletes it, an int or str replaces it.
fn translate(me: &mut Interp, s: &str, table: &Value) -> R<String> {
    let mut out = String::new();
    for c in s.chars() {
        let key = Value::Int(c as i64);
        let hit = match table {
            Value::Dict(d) => {
                let k = Key::new(key)?;
                d.borrow().get(&k).cloned()
            }
            other => match me.get_item(other, &key) {
                Ok(v) => Some(v),
                Err(e)
                    if matches!(
                        e.error.kind,
                        crate::error::ErrorKind::KeyError | crate::error::ErrorKind::IndexError
                    ) =>
                {
                    None
                }
                Err(e) => return Err(e),
            },
        };
        match &hit {
            None => out.push(c),
            Some(Value::None) => {}
            Some(Value::Str(t)) => containers::push_str(&mut out, t)?,
            Some(Value::Int(i)) => match u32::try_from(*i).ok().and_then(char::from_u32) {
                Some(ch) => out.push(ch),
                None => return Err(value_err("character mapping must be in range(0x110000)")),
            },
            Some(_) => {
                return Err(type_err(
                    "character mapping must return integer, None or str",
                ))
            }
        }
    }
    Ok(out)
}

/// `str.maketrans(x[, y[, z]])`.
pub fn maketrans_fn(_: &mut Interp, args: &[Value], _: &[(Rc<str>, Value)]) -> R<Value> {
    arity("maketrans", args, 1, 3)?;
    let mut m = crate::interp::value::DictMap::default();
    let key = |c: char| Key(Value::Int(c as i64));
    if args.len() == 1 {
        let Value::Dict(d) = &args[0] else {
            return Err(type_err(
                "if you give only one argument to maketrans it must be a dict",
            ));
        };
        for (k, v) in d.borrow().iter() {
            let k = match &k.0 {
                Value::Str(s) if s.chars().count() == 1 => key(s.chars().next().unwrap_or('\0')),
                Value::Int(_) => k.clone(),
                _ => {
                    return Err(value_err(
                        "string keys in translate table must be of length 1",
                    ))
                }
            };
            m.insert(k, v.clone());
        }
        return Ok(Value::Dict(Rc::new(std::cell::RefCell::new(m))));
    }
    let (x, y) = (
        str_arg(&args[0], "maketrans")?,
        str_arg(&args[1], "maketrans")?,
    );
    if x.chars().count() != y.chars().count() {
        return Err(value_err(
            "the first two maketrans arguments must have equal length",
        ));
    }
    for (a, b) in x.chars().zip(y.chars()) {
        m.insert(key(a), Value::Int(b as i64));
    }
    if let Some(z) = args.get(2) {
        for c in str_arg(z, "maketrans")?.chars() {
            m.insert(key(c), Value::None);
        }
    }
    Ok(Value::Dict(Rc::new(std::cell::RefCell::new(m))))
}

/// The methods in `MORE_STR_METHODS` (`None` for other names).
pub fn str_method_more(
    me: &mut Interp,
    s: &Rc<str>,
    name: &str,
    args: &[Value],
    kw: &[(Rc<str>, Value)],
) -> R<Option<Value>> {
    Ok(Some(match name {
        "rindex" => search(s, name, args)?,
        "rsplit" => {
            arity(name, args, 0, 2)?;
            let sep = args.first().or_else(|| super::kwarg(kw, "sep"));
            let maxsplit = match args.get(1).or_else(|| super::kwarg(kw, "maxsplit")) {
                Some(v) => int_arg(v, "")?,
                None => -1,
            };
            rsplit(s, sep, maxsplit)?
        }
        "partition" | "rpartition" => {
            arity(name, args, 1, 1)?;
            let sep = str_arg(&args[0], name)?;
            if sep.is_empty() {
                return Err(value_err("empty separator"));
            }
            let hit = if name == "partition" {
                s.find(sep)
            } else {
                s.rfind(sep)
            };
            let parts = match (hit, name) {
                (Some(i), _) => [&s[..i], sep, &s[i + sep.len()..]],
                (None, "partition") => [&s[..], "", ""],
                (None, _) => ["", "", &s[..]],
            };
            Value::Tuple(parts.iter().map(|p| Value::str(p)).collect())
        }
        "swapcase" => {
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                if c.is_uppercase() {
                    out.extend(c.to_lowercase());
                } else if c.is_lowercase() {
                    out.extend(c.to_uppercase());
                } else {
                    out.push(c);
                }
            }
            Value::str(&out)
        }
        "casefold" => {
            arity(name, args, 0, 0)?;
            Value::str(&s.to_lowercase().replace('ß', "ss"))
        }
        "expandtabs" => {
            arity(name, args, 0, 1)?;
            let size = match args.first().or_else(|| super::kwarg(kw, "tabsize")) {
                Some(v) => int_arg(v, "")?,
                None => 8,
            };
            Value::str(&expandtabs(s, size)?)
        }
        "isdecimal" => Value::Bool(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())),
        "isnumeric" => Value::Bool(!s.is_empty() && s.chars().all(char::is_numeric)),
        "isidentifier" => Value::Bool(isidentifier(s)),
        "isprintable" => Value::Bool(s.chars().all(crate::pyfmt::is_printable)),
        "isascii" => Value::Bool(s.is_ascii()),
        "istitle" => Value::Bool(istitle(s)),
        "removeprefix" => {
            arity(name, args, 1, 1)?;
            let p = str_arg(&args[0], name)?;
            Value::str(s.strip_prefix(p).unwrap_or(s))
        }
        "removesuffix" => {
            arity(name, args, 1, 1)?;
            let p = str_arg(&args[0], name)?;
            Value::str(s.strip_suffix(p).unwrap_or(s))
        }
        "translate" => {
            arity(name, args, 1, 1)?;
            Value::str(&translate(me, s, &args[0])?)
        }
        "format_map" => {
            arity(name, args, 1, 1)?;
            Value::str(&super::strformat::format_with(
                me,
                s,
                &[],
                &[],
                Some(&args[0]),
            )?)
        }
        _ => return Ok(None),
    }))
}
