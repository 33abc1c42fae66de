//! Calling built-in types as constructors: `int(x)`, `str(x)`, `list(it)`, `range(...)`...

use super::{arity, kwarg, no_kw};
use crate::interp::repr::fmt_err;
use crate::interp::value::{DictMap, Key, RangeObj, TypeTag, Value};
use crate::interp::{type_err, value_err, Interp, R};
use crate::pyfmt::int_from_float;
use std::rc::Rc;

type Kw = Vec<(Rc<str>, Value)>;

/// Parses an int literal the way `int(str)` does (whitespace, sign, underscores).
fn parse_int(s: &str, base: u32) -> Option<i64> {
    let t = s.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let digits = if base == 16 {
        digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
            .unwrap_or(digits)
    } else {
        digits
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    let v = i128::from_str_radix(&clean, base).ok()?;
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

/// Parses a float the way `float(str)` does.
pub fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.replace('_', "");
    match t.as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => return Some(f64::INFINITY),
        "-inf" | "-infinity" => return Some(f64::NEG_INFINITY),
        "nan" | "+nan" | "-nan" => return Some(f64::NAN),
        _ => {}
    }
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || "+-.e".contains(c)) {
        return None;
    }
    t.parse::<f64>().ok()
}

/// `int(v)`.
pub fn to_int(me: &mut Interp, v: &Value) -> R<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        Value::Float(f) => int_from_float(*f).map_err(fmt_err),
        Value::Tensor(t) => match super::tensor::tensor_scalar(t)? {
            Value::Float(f) => int_from_float(f).map_err(fmt_err),
            other => to_int(me, &other),
        },
        Value::Str(s) => parse_int(s, 10).ok_or_else(|| {
            value_err(format!(
                "invalid literal for int() with base 10: {}",
                crate::pyfmt::str_repr(s)
            ))
        }),
        Value::Instance(_) => match me.call_dunder(v, "__int__", &[])? {
            Some(Value::Int(i)) => Ok(i),
            _ => Err(type_err(format!(
                "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                v.type_name()
            ))),
        },
        _ => Err(type_err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            v.type_name()
        ))),
    }
}

/// `float(v)`.
pub fn to_float(me: &mut Interp, v: &Value) -> R<f64> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Bool(b) => Ok(*b as i64 as f64),
        Value::Float(f) => Ok(*f),
        Value::Tensor(t) => to_float(me, &super::tensor::tensor_scalar(t)?),
        Value::Str(s) => parse_float(s).ok_or_else(|| {
            value_err(format!(
                "could not convert string to float: {}",
                crate::pyfmt::str_repr(s)
            ))
        }),
        Value::Instance(_) => match me.call_dunder(v, "__float__", &[])? {
            Some(Value::Float(f)) => Ok(f),
            _ => Err(type_err(format!(
                "float() argument must be a string or a real number, not '{}'",
                v.type_name()
            ))),
        },
        _ => Err(type_err(format!(
            "float() argument must be a string or a real number, not '{}'",
            v.type_name()
        ))),
    }
}

/// An argument that must be a number, as f64 (for math functions).
pub fn num_arg(v: &Value, fname: &str) -> R<f64> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Bool(b) => Ok(*b as i64 as f64),
        Value::Float(f) => Ok(*f),
        _ => Err(type_err(format!(
            "{}() argument must be a real number, not '{}'",
            fname,
            v.type_name()
        ))),
    }
}

/// An argument that must be an int.
pub fn int_arg(v: &Value, what: &str) -> R<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        _ => Err(type_err(format!(
            "'{}' object cannot be interpreted as an integer{}",
            v.type_name(),
            if what.is_empty() {
                String::new()
            } else {
                format!(" ({what})")
            }
        ))),
    }
}

/// Builds a dict from a mapping or an iterable of pairs.
pub fn dict_from(me: &mut Interp, v: &Value, m: &mut DictMap) -> R<()> {
    if let Value::Dict(d) = v {
        return me.merge_maps(m, d.borrow().clone(), "dict");
    }
    let items = me.collect(v)?;
    for (i, it) in items.iter().enumerate() {
        let pair = me.collect(it)?;
        if pair.len() != 2 {
            return Err(value_err(format!(
                "dictionary update sequence element #{} has length {}; 2 is required",
                i,
                pair.len()
            )));
        }
        let k = me.key_in_map(pair[0].clone(), m)?;
        crate::interp::containers::map_insert(m, k, pair[1].clone(), "dict")?;
    }
    Ok(())
}

impl Interp {
    pub fn construct_builtin(&mut self, tag: TypeTag, args: Vec<Value>, kw: Kw) -> R<Value> {
        let name = tag_name(tag);
        if tag == TypeTag::Tensor {
            return super::tensor_create::construct(&args, &kw);
        }
        if tag != TypeTag::Dict && tag != TypeTag::Int {
            no_kw(name, &kw, &[])?;
        }
        Ok(match tag {
            TypeTag::Int => {
                no_kw(name, &kw, &["base"])?;
                arity(name, &args, 0, 2)?;
                let base = match (args.get(1), kwarg(&kw, "base")) {
                    (Some(b), _) | (None, Some(b)) => Some(super::convert::int_arg(b, "")?),
                    _ => None,
                };
                match (args.first(), base) {
                    (None, _) => Value::Int(0),
                    (Some(Value::Str(s)), Some(b)) => {
                        if !(2..=36).contains(&b) {
                            return Err(value_err("int() base must be >= 2 and <= 36, or 0"));
                        }
                        Value::Int(parse_int(s, b as u32).ok_or_else(|| {
                            value_err(format!(
                                "invalid literal for int() with base {}: {}",
                                b,
                                crate::pyfmt::str_repr(s)
                            ))
                        })?)
                    }
                    (Some(_), Some(_)) => {
                        return Err(type_err(
                            "int() can't convert non-string with explicit base",
                        ))
                    }
                    (Some(v), None) => Value::Int(to_int(self, v)?),
                }
            }
            TypeTag::Float => {
                arity(name, &args, 0, 1)?;
                match args.first() {
                    None => Value::Float(0.0),
                    Some(v) => Value::Float(to_float(self, v)?),
                }
            }
            TypeTag::Str => {
                arity(name, &args, 0, 1)?;
                match args.first() {
                    None => Value::str(""),
                    Some(v) => Value::str(&self.str_of(v)?),
                }
            }
            TypeTag::Bool => {
                arity(name, &args, 0, 1)?;
                match args.first() {
                    None => Value::Bool(false),
                    Some(v) => Value::Bool(self.truthy(v)?),
                }
            }
            TypeTag::List => {
                arity(name, &args, 0, 1)?;
                match args.first() {
                    None => Value::list(vec![]),
                    Some(v) => Value::list(self.collect(v)?),
                }
            }
            TypeTag::Size => super::size::construct(self, &args)?,
            TypeTag::Tuple => {
                arity(name, &args, 0, 1)?;
                match args.first() {
                    None => Value::tuple(vec![]),
                    Some(Value::Tuple(t)) => Value::Tuple(t.clone()),
                    Some(v) => Value::tuple(self.collect(v)?),
                }
            }
            TypeTag::Dict => {
                arity(name, &args, 0, 1)?;
                let mut m = DictMap::default();
                if let Some(v) = args.first() {
                    dict_from(self, v, &mut m)?;
                }
                for (k, v) in kw {
                    m.insert(Key(Value::Str(k)), v);
                }
                Value::dict(m)
            }
            TypeTag::Set | TypeTag::FrozenSet => {
                arity(name, &args, 0, 1)?;
                if let (TypeTag::FrozenSet, Some(v @ Value::FrozenSet(_))) = (tag, args.first()) {
                    return Ok(v.clone());
                }
                let mut m = DictMap::default();
                if let Some(v) = args.first() {
                    for x in self.collect(v)? {
                        let k = self.key_in_map(x, &m)?;
                        m.insert(k, Value::None);
                    }
                }
                if tag == TypeTag::Set {
                    Value::set(m)
                } else {
                    Value::frozenset(m)
                }
            }
            TypeTag::Range => {
                arity(name, &args, 1, 3)?;
                let mut n = [0i64; 3];
                for (i, a) in args.iter().enumerate() {
                    n[i] = int_arg(a, "")?;
                }
                let (start, stop, step) = match args.len() {
                    1 => (0, n[0], 1),
                    2 => (n[0], n[1], 1),
                    _ => (n[0], n[1], n[2]),
                };
                if step == 0 {
                    return Err(value_err("range() arg 3 must not be zero"));
                }
                Value::Range(Rc::new(RangeObj { start, stop, step }))
            }
            TypeTag::Slice => {
                arity(name, &args, 1, 3)?;
                let mut p = [Value::None, Value::None, Value::None];
                match args.len() {
                    1 => p[1] = args[0].clone(),
                    _ => {
                        for (i, a) in args.into_iter().enumerate() {
                            p[i] = a;
                        }
                    }
                }
                Value::Slice(Rc::new(p))
            }
            TypeTag::Type => {
                arity(name, &args, 1, 1)?;
                Value::Class(self.class_of(&args[0]))
            }
            TypeTag::Object => {
                arity(name, &args, 0, 0)?;
                let inst = crate::interp::value::Instance::new(self.b.object.clone());
                Value::Instance(Rc::new(inst))
            }
            TypeTag::Iterator => {
                arity(name, &args, 1, 1)?;
                self.get_iter(&args[0])?
            }
            _ => return Err(type_err(format!("cannot create '{name}' instances"))),
        })
    }
}

fn tag_name(tag: TypeTag) -> &'static str {
    match tag {
        TypeTag::Object => "object",
        TypeTag::NoneType => "NoneType",
        TypeTag::Bool => "bool",
        TypeTag::Int => "int",
        TypeTag::Float => "float",
        TypeTag::Str => "str",
        TypeTag::List => "list",
        TypeTag::Tuple => "tuple",
        TypeTag::Size => "Size",
        TypeTag::Dict => "dict",
        TypeTag::Set => "set",
        TypeTag::FrozenSet => "frozenset",
        TypeTag::Range => "range",
        TypeTag::Slice => "slice",
        TypeTag::Function => "function",
        TypeTag::BuiltinFunction => "builtin_function_or_method",
        TypeTag::Method => "method",
        TypeTag::Type => "type",
        TypeTag::Module => "module",
        TypeTag::Iterator => "iterator",
        TypeTag::Super => "super",
        TypeTag::Ellipsis => "ellipsis",
        TypeTag::NotImplementedType => "NotImplementedType",
        TypeTag::Tensor => "Tensor",
        TypeTag::DType => "dtype",
        TypeTag::GradMode => "no_grad",
        TypeTag::GradFn => "Node",
        TypeTag::Generator => "generator",
    }
}
