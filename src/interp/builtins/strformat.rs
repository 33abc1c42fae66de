//! `str.format` / `str.format_map`: replacement fields with indexes and attributes
//! (`{0[1]}`, `{a.b}`), conversions (`!r !s !a`) and nested fields in the spec
//! (`{:{w}.{p}f}`), with CPython's error messages.

use crate::error::ErrorKind;
use crate::interp::value::Value;
use crate::interp::{err, value_err, Interp, R};
use std::rc::Rc;

/// Automatic (`{}`) versus manual (`{0}`) field numbering; mixing them is an error.
#[derive(PartialEq, Clone, Copy)]
enum Numbering {
    Unset,
    Auto(usize),
    Manual,
}

struct Ctx<'a> {
    args: &'a [Value],
    kw: &'a [(Rc<str>, Value)],
    mapping: Option<&'a Value>,
    numbering: Numbering,
}

/// Formats `s` with positional `args`, keyword `kw`, or (for `format_map`) a mapping.
pub fn format_with(
    me: &mut Interp,
    s: &str,
    args: &[Value],
    kw: &[(Rc<str>, Value)],
    mapping: Option<&Value>,
) -> R<String> {
    let mut cx = Ctx {
        args,
        kw,
        mapping,
        numbering: Numbering::Unset,
    };
    render(me, s, &mut cx, 2)
}

fn render(me: &mut Interp, s: &str, cx: &mut Ctx, depth: u32) -> R<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                let mut level = 1;
                loop {
                    match chars.next() {
                        Some('{') => {
                            level += 1;
                            field.push('{');
                        }
                        Some('}') => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                            field.push('}');
                        }
                        Some(ch) => field.push(ch),
                        None if field.is_empty() => {
                            return Err(value_err("Single '{' encountered in format string"))
                        }
                        None => return Err(value_err("expected '}' before end of string")),
                    }
                }
                if depth == 0 {
                    return Err(value_err("Max string recursion exceeded"));
                }
                out.push_str(&field_text(me, &field, cx, depth)?);
            }
            '}' => return Err(value_err("Single '}' encountered in format string")),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// One replacement field's text: `name[idx].attr!conv:spec`.
fn field_text(me: &mut Interp, field: &str, cx: &mut Ctx, depth: u32) -> R<String> {
    // The field name ends at the first '!' or ':' outside brackets.
    let mut in_bracket = false;
    let mut name_end = field.len();
    for (i, c) in field.char_indices() {
        match c {
            '[' => in_bracket = true,
            ']' => in_bracket = false,
            '!' | ':' if !in_bracket => {
                name_end = i;
                break;
            }
            _ => {}
        }
    }
    let name = &field[..name_end];
    let rest = &field[name_end..];
    let (conv, spec) = if let Some(r) = rest.strip_prefix('!') {
        let mut cs = r.chars();
        let conv = cs.next();
        let after = cs.as_str();
        let spec = match after.strip_prefix(':') {
            Some(sp) => sp,
            None if after.is_empty() => "",
            None => return Err(value_err("expected ':' after conversion specifier")),
        };
        (conv, spec)
    } else {
        (None, rest.strip_prefix(':').unwrap_or(""))
    };
    let mut v = lookup(me, name, cx)?;
    v = match conv {
        None => v,
        Some('r') => Value::str(&me.repr(&v)?),
        Some('s') => Value::str(&me.str_of(&v)?),
        Some('a') => Value::str(&crate::pyfmt::ascii_escape(&me.repr(&v)?)),
        Some(c) => return Err(value_err(format!("Unknown conversion specifier {c}"))),
    };
    let spec = if spec.contains('{') {
        render(me, spec, cx, depth - 1)?
    } else {
        spec.to_string()
    };
    me.format_spec(&v, &spec)
}

/// The value a field name refers to: the first part picks an argument, then
/// `.attr` and `[key]` parts are applied in order.
fn lookup(me: &mut Interp, name: &str, cx: &mut Ctx) -> R<Value> {
    let first_end = name.find(['.', '[']).unwrap_or(name.len());
    let first = &name[..first_end];
    let mut v = if first.is_empty() || first.bytes().all(|b| b.is_ascii_digit()) {
        let i = if first.is_empty() {
            match cx.numbering {
                Numbering::Manual => return Err(value_err(
                    "cannot switch from manual field specification to automatic field numbering",
                )),
                Numbering::Unset => 0,
                Numbering::Auto(n) => n,
            }
        } else {
            if let Numbering::Auto(_) = cx.numbering {
                return Err(value_err(
                    "cannot switch from automatic field numbering to manual field specification",
                ));
            }
            first.parse::<usize>().unwrap_or(usize::MAX)
        };
        cx.numbering = if first.is_empty() {
            Numbering::Auto(i + 1)
        } else {
            Numbering::Manual
        };
        if cx.mapping.is_some() {
            return Err(value_err("Format string contains positional fields"));
        }
        cx.args.get(i).cloned().ok_or_else(|| {
            err(
                ErrorKind::IndexError,
                format!("Replacement index {i} out of range for positional args tuple"),
            )
        })?
    } else if let Some(m) = cx.mapping {
        me.get_item(m, &Value::str(first))?
    } else {
        match super::kwarg(cx.kw, first) {
            Some(v) => v.clone(),
            None => return Err(me.key_error(&Value::str(first))),
        }
    };
    let mut rest = &name[first_end..];
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return Err(value_err("Empty attribute in format string"));
            }
            v = me.get_attr(&v, &r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Err(value_err("Missing ']' in format string"));
            };
            let key = &r[..end];
            if key.is_empty() {
                return Err(value_err("Empty attribute in format string"));
            }
            let k = match key.parse::<i64>() {
                Ok(i) if key.bytes().all(|b| b.is_ascii_digit()) => Value::Int(i),
                _ => Value::str(key),
            };
            v = me.get_item(&v, &k)?;
            rest = &r[end + 1..];
        } else {
            return Err(value_err(
                "Only '.' or '[' may follow ']' in format field specifier",
            ));
        }
    }
    Ok(v)
}
