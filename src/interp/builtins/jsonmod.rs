//! The `json` module: `dumps`/`dump` written to match CPython's encoder byte for byte
//! (`indent`, `sort_keys`, `separators`, `ensure_ascii`, `default`), `loads`/`load`
//! parsed by serde_json into dicts that keep the document's key order; malformed text
//! raises `json.JSONDecodeError`, a ValueError subclass.

use super::mathmod::module;
use super::{arity, kwarg, no_kw};
use crate::error::ErrorKind;
use crate::interp::value::{ClassKind, DictMap, Key, ModuleObj, Value};
use crate::interp::{err, type_err, value_err, Interp, R};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::fmt::Write;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// The `json` module (its JSONDecodeError derives from the interpreter's ValueError).
pub fn json_module(me: &Interp) -> Rc<ModuleObj> {
    let m = module(
        "json",
        &[
            ("dumps", dumps),
            ("dump", dump),
            ("loads", loads),
            ("load", load),
        ],
        &[],
    );
    let base = me.b.exc_class(ErrorKind::ValueError);
    let cls = super::new_class("JSONDecodeError", Some(base), ClassKind::User);
    m.set(&"JSONDecodeError".into(), Value::Class(cls));
    m
}

/// Encoder options (CPython's `json.dumps` keywords).
struct Enc {
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
    sort_keys: bool,
    ensure_ascii: bool,
    allow_nan: bool,
    skipkeys: bool,
    default: Option<Value>,
    /// Containers being encoded (cycle detection).
    stack: Vec<usize>,
}

const DUMP_KW: &[&str] = &[
    "indent",
    "separators",
    "sort_keys",
    "ensure_ascii",
    "allow_nan",
    "skipkeys",
    "default",
    "check_circular",
    "cls",
];

fn encoder(me: &mut Interp, kw: Kw) -> R<Enc> {
    let indent = match kwarg(kw, "indent") {
        None | Some(Value::None) => None,
        Some(Value::Int(n)) => Some(" ".repeat((*n).max(0) as usize)),
        Some(Value::Str(s)) => Some(s.to_string()),
        Some(v) => {
            return Err(type_err(format!(
                "indent must be an int or a str, not {}",
                v.type_name()
            )))
        }
    };
    let (item_sep, key_sep) = match kwarg(kw, "separators") {
        None | Some(Value::None) => (
            if indent.is_some() { "," } else { ", " }.to_string(),
            ": ".to_string(),
        ),
        Some(v) => {
            let parts = me.collect(v)?;
            match parts.as_slice() {
                [Value::Str(a), Value::Str(b)] => (a.to_string(), b.to_string()),
                _ => {
                    return Err(value_err(
                        "separators must be a (item, key) pair of strings",
                    ))
                }
            }
        }
    };
    let flag = |me: &mut Interp, name: &str, dflt: bool| match kwarg(kw, name) {
        Some(v) => me.truthy(v),
        None => Ok(dflt),
    };
    Ok(Enc {
        indent,
        item_sep,
        key_sep,
        sort_keys: flag(me, "sort_keys", false)?,
        ensure_ascii: flag(me, "ensure_ascii", true)?,
        allow_nan: flag(me, "allow_nan", true)?,
        skipkeys: flag(me, "skipkeys", false)?,
        default: kwarg(kw, "default")
            .filter(|v| !matches!(v, Value::None))
            .cloned(),
        stack: Vec::new(),
    })
}

fn quote(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && !c.is_ascii()) => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Enc {
    fn float(&self, f: f64) -> R<String> {
        if f.is_finite() {
            return Ok(crate::pyfmt::float_repr(f));
        }
        if !self.allow_nan {
            return Err(value_err(format!(
                "Out of range float values are not JSON compliant: {}",
                crate::pyfmt::float_repr(f)
            )));
        }
        Ok(if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .into())
    }

    fn newline(&self, out: &mut String, depth: usize) {
        if let Some(ind) = &self.indent {
            out.push('\n');
            for _ in 0..depth {
                out.push_str(ind);
            }
        }
    }

    fn enter(&mut self, v: &Value) -> R<()> {
        let id = v.ptr_id();
        if self.stack.contains(&id) {
            return Err(value_err("Circular reference detected"));
        }
        if self.stack.len() > 1000 {
            return Err(err(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded while encoding a JSON object",
            ));
        }
        self.stack.push(id);
        Ok(())
    }

    fn encode(&mut self, me: &mut Interp, v: &Value, out: &mut String, depth: usize) -> R<()> {
        match v {
            Value::None => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => out.push_str(&self.float(*f)?),
            Value::Str(s) => quote(out, s, self.ensure_ascii),
            Value::List(_) | Value::Tuple(_) | Value::Size(_) => {
                let items: Vec<Value> = match v {
                    Value::List(l) => l.borrow().clone(),
                    Value::Tuple(t) | Value::Size(t) => t.to_vec(),
                    _ => Vec::new(),
                };
                if items.is_empty() {
                    out.push_str("[]");
                    return Ok(());
                }
                self.enter(v)?;
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_sep);
                    }
                    self.newline(out, depth + 1);
                    self.encode(me, x, out, depth + 1)?;
                }
                self.newline(out, depth);
                out.push(']');
                self.stack.pop();
            }
            Value::Dict(d) => {
                let mut items: Vec<(String, Value)> = Vec::new();
                for (k, x) in d.borrow().iter() {
                    let key = match &k.0 {
                        Value::Str(s) => s.to_string(),
                        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
                        Value::Int(i) => i.to_string(),
                        Value::Float(f) => self.float(*f)?,
                        Value::None => "null".into(),
                        _ if self.skipkeys => continue,
                        other => {
                            return Err(type_err(format!(
                                "keys must be str, int, float, bool or None, not {}",
                                other.type_name()
                            )))
                        }
                    };
                    items.push((key, x.clone()));
                }
                if items.is_empty() {
                    out.push_str("{}");
                    return Ok(());
                }
                if self.sort_keys {
                    items.sort_by(|a, b| a.0.cmp(&b.0));
                }
                self.enter(v)?;
                out.push('{');
                for (i, (k, x)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_sep);
                    }
                    self.newline(out, depth + 1);
                    quote(out, k, self.ensure_ascii);
                    out.push_str(&self.key_sep);
                    self.encode(me, x, out, depth + 1)?;
                }
                self.newline(out, depth);
                out.push('}');
                self.stack.pop();
            }
            other => match self.default.clone() {
                Some(f) => {
                    self.enter(v)?;
                    let r = me.call_value(&f, vec![other.clone()], vec![])?;
                    self.encode(me, &r, out, depth)?;
                    self.stack.pop();
                }
                None => {
                    return Err(type_err(format!(
                        "Object of type {} is not JSON serializable",
                        other.type_name()
                    )))
                }
            },
        }
        Ok(())
    }
}

fn dumps(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("dumps", args, 1, 1)?;
    no_kw("dumps", kw, DUMP_KW)?;
    let mut enc = encoder(me, kw)?;
    let mut out = String::new();
    enc.encode(me, &args[0], &mut out, 0)?;
    Ok(Value::str(&out))
}

fn dump(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("dump", args, 2, 2)?;
    no_kw("dump", kw, DUMP_KW)?;
    let mut enc = encoder(me, kw)?;
    let mut out = String::new();
    enc.encode(me, &args[0], &mut out, 0)?;
    me.call_builtin_method(&args[1], "write", vec![Value::str(&out)], vec![])?;
    Ok(Value::None)
}

/// Builds Kiln values straight from serde_json's parser (dicts keep the key order).
struct Build;

impl<'de> DeserializeSeed<'de> for Build {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(Build)
    }
}

impl<'de> Visitor<'de> for Build {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::None)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::Int)
            .map_err(|_| E::custom("integer too large for Kiln's 64-bit int"))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::str(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = a.next_element_seed(Build)? {
            v.push(x);
        }
        Ok(Value::list(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut m = DictMap::default();
        while let Some(k) = a.next_key::<String>()? {
            let v = a.next_value_seed(Build)?;
            m.insert(Key(Value::str(&k)), v);
        }
        Ok(Value::Dict(Rc::new(RefCell::new(m))))
    }
}

/// serde_json's error as CPython's message and character position: end-of-input errors
/// point at the end (an unterminated string at its opening quote), a bad literal at its
/// first letter, a trailing comma at the bracket after it.
fn python_error(e: &serde_json::Error, s: &str) -> (String, usize) {
    let chars: Vec<char> = s.chars().collect();
    let (line, col) = (e.line(), e.column().max(1));
    let mut pos: usize = s
        .split('\n')
        .take(line.saturating_sub(1))
        .map(|l| l.chars().count() + 1)
        .sum::<usize>()
        + col
        - 1;
    pos = pos.min(chars.len());
    let text = e.to_string();
    let text = text.split(" at line ").next().unwrap_or("");
    let msg = match text {
        "EOF while parsing a string" => {
            let mut q = chars.len();
            while q > 0 {
                q -= 1;
                if chars[q] == '"' && (q == 0 || chars[q - 1] != '\\') {
                    break;
                }
            }
            pos = q;
            "Unterminated string starting at"
        }
        t if t.starts_with("EOF while parsing") => {
            pos = chars.len();
            if t.ends_with("a value") {
                // a cut-off literal (`nul`): CPython points at its first letter
                while pos > 0 && chars[pos - 1].is_ascii_alphabetic() {
                    pos -= 1;
                }
                "Expecting value"
            } else {
                "Expecting ',' delimiter"
            }
        }
        "expected ident" | "expected value" => {
            while pos > 0 && chars.get(pos - 1).is_some_and(|c| c.is_ascii_alphabetic()) {
                pos -= 1;
            }
            "Expecting value"
        }
        "trailing comma" => match chars.get(pos) {
            Some('}') => "Expecting property name enclosed in double quotes",
            _ => "Expecting value",
        },
        "key must be a string" => "Expecting property name enclosed in double quotes",
        "expected `:`" => "Expecting ':' delimiter",
        "expected `,` or `]`" | "expected `,` or `}`" => "Expecting ',' delimiter",
        "trailing characters" => "Extra data",
        t if t.starts_with("control character") => "Invalid control character at",
        t => return (t.to_string(), pos),
    };
    (msg.to_string(), pos)
}

fn decode(me: &mut Interp, s: &str) -> R<Value> {
    let mut de = serde_json::Deserializer::from_str(s);
    let r = Build.deserialize(&mut de).and_then(|v| de.end().map(|_| v));
    match r {
        Ok(v) => Ok(v),
        Err(e) => {
            let (msg, pos) = python_error(&e, s);
            let before: String = s.chars().take(pos).collect();
            let line = before.matches('\n').count() + 1;
            let col = pos
                - before
                    .rfind('\n')
                    .map_or(0, |i| before[..=i].chars().count())
                + 1;
            let full = format!("{msg}: line {line} column {col} (char {pos})");
            let cls = match &me.import(&["json".into()])?.get("JSONDecodeError") {
                Some(Value::Class(c)) => c.clone(),
                _ => return Err(value_err(full)),
            };
            let exc = crate::interp::exc::new_exc_instance(&cls, vec![Value::str(&full)]);
            if let Value::Instance(i) = &exc {
                i.put_attr("msg", Value::str(&msg));
                i.put_attr("doc", Value::str(s));
                i.put_attr("pos", Value::Int(pos as i64));
                i.put_attr("lineno", Value::Int(line as i64));
                i.put_attr("colno", Value::Int(col as i64));
            }
            Err(me.exc_from_value(exc)?)
        }
    }
}

fn loads(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("loads", args, 1, 1)?;
    no_kw("loads", kw, &[])?;
    match &args[0] {
        Value::Str(s) => decode(me, s),
        v => Err(type_err(format!(
            "the JSON object must be str, bytes or bytearray, not {}",
            v.type_name()
        ))),
    }
}

fn load(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    arity("load", args, 1, 1)?;
    no_kw("load", kw, &[])?;
    let text = me.call_builtin_method(&args[0], "read", vec![], vec![])?;
    loads(me, &[text], &[])
}
