//! `repr()`, `str()` and format specs of values (`%`-formatting is in builtins/percent.rs).

use super::value::Value;
use super::{err, type_err, Interp, R};
use crate::pyfmt::{float_repr, format_value, str_repr, FmtArg};

/// Converts an error from the formatting helpers into an exception.
pub fn fmt_err(e: crate::Error) -> super::Exc {
    err(e.kind, e.message)
}

impl Interp {
    /// `repr(v)`.
    pub fn repr(&mut self, v: &Value) -> R<String> {
        let mut s = String::new();
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.repr_into(v, &mut s, true))?;
        Ok(s)
    }

    /// `str(v)`.
    pub fn str_of(&mut self, v: &Value) -> R<String> {
        match v {
            Value::Str(s) => Ok(s.to_string()),
            _ => {
                let mut s = String::new();
                stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.repr_into(v, &mut s, false))?;
                Ok(s)
            }
        }
    }

    fn repr_seq(&mut self, items: &[Value], open: &str, close: &str, out: &mut String) -> R<()> {
        out.push_str(open);
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.repr_nested(x, out)?;
        }
        out.push_str(close);
        Ok(())
    }

    fn repr_nested(&mut self, x: &Value, out: &mut String) -> R<()> {
        if self.repr_guard.contains(&x.ptr_id()) && x.ptr_id() != 0 {
            out.push_str(match x {
                Value::Dict(_) => "{...}",
                _ => "[...]",
            });
            return Ok(());
        }
        self.nested(" while getting the repr of an object", |me| {
            me.repr_into(x, out, true)
        })
    }

    fn repr_into(&mut self, v: &Value, out: &mut String, is_repr: bool) -> R<()> {
        use Value::*;
        match v {
            None => out.push_str("None"),
            Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            Int(i) => out.push_str(&i.to_string()),
            SymInt(s) => out.push_str(&s.concrete().to_string()),
            SymFloat(s) => out.push_str(&float_repr(s.concrete())),
            Float(f) => out.push_str(&float_repr(*f)),
            Str(s) => {
                if is_repr {
                    out.push_str(&str_repr(s))
                } else {
                    out.push_str(s)
                }
            }
            List(l) => {
                let items = l.borrow().clone();
                self.repr_guard.push(v.ptr_id());
                let r = self.repr_seq(&items, "[", "]", out);
                self.repr_guard.pop();
                r?;
            }
            Size(t) => self.repr_seq(t, "torch.Size([", "])", out)?,
            Tuple(t) => {
                if t.len() == 1 {
                    self.repr_seq(t, "(", ",)", out)?;
                } else {
                    self.repr_seq(t, "(", ")", out)?;
                }
            }
            Dict(d) => {
                let items: Vec<(Value, Value)> = d
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.0.clone(), v.clone()))
                    .collect();
                self.repr_guard.push(v.ptr_id());
                out.push('{');
                let mut r = Ok(());
                for (i, (k, x)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    r = self.repr_nested(k, out);
                    if r.is_err() {
                        break;
                    }
                    out.push_str(": ");
                    r = self.repr_nested(x, out);
                    if r.is_err() {
                        break;
                    }
                }
                self.repr_guard.pop();
                r?;
                out.push('}');
            }
            Set(d) => {
                let items: Vec<Value> = d.borrow().keys().map(|k| k.0.clone()).collect();
                if items.is_empty() {
                    out.push_str("set()");
                } else {
                    self.repr_seq(&items, "{", "}", out)?;
                }
            }
            FrozenSet(d) => {
                let items: Vec<Value> = d.borrow().keys().map(|k| k.0.clone()).collect();
                out.push_str("frozenset(");
                if !items.is_empty() {
                    self.repr_seq(&items, "{", "}", out)?;
                }
                out.push(')');
            }
            Range(r) => {
                if r.step == 1 {
                    out.push_str(&format!("range({}, {})", r.start, r.stop))
                } else {
                    out.push_str(&format!("range({}, {}, {})", r.start, r.stop, r.step))
                }
            }
            Slice(s) => {
                out.push_str("slice(");
                self.repr_seq(&s[..], "", ")", out)?;
            }
            Ellipsis => out.push_str("Ellipsis"),
            NotImplemented => out.push_str("NotImplemented"),
            GradFn(g) => out.push_str(&g.repr()),
            Tensor(_) | DType(_) | GradMode(_) => {
                out.push_str(&self.tensor_repr(v).unwrap_or_default())
            }
            Func(f) => out.push_str(&format!("<function {} at {:#x}>", f.proto.name, v.ptr_id())),
            Native(f) => out.push_str(&format!("<built-in function {}>", f.name)),
            Graph(g) if is_repr => out.push_str(&g.summary()),
            Graph(g) => out.push_str(&g.text(&self.sources)),
            Compiled(c) => out.push_str(&format!(
                "<compiled function {} at {:#x}>",
                c.name,
                v.ptr_id()
            )),
            BoundMethod(bm) => {
                let name = match &bm.1 {
                    Func(f) => f.proto.name.to_string(),
                    Native(n) => n.name.to_string(),
                    _ => "?".into(),
                };
                out.push_str(&format!("<bound method {} of {}>", name, self.repr(&bm.0)?));
            }
            BuiltinMethod(bm) => out.push_str(&format!(
                "<built-in method {} of {} object>",
                bm.1,
                bm.0.type_name()
            )),
            Class(c) => match c.kind {
                super::value::ClassKind::User => {
                    out.push_str(&format!("<class '__main__.{}'>", c.name))
                }
                super::value::ClassKind::Builtin(super::value::TypeTag::Size) => {
                    out.push_str("<class 'torch.Size'>")
                }
                _ => out.push_str(&format!("<class '{}'>", c.name)),
            },
            Instance(inst) => {
                let cls = inst.class.clone();
                let user = if is_repr {
                    cls.lookup("__repr__")
                } else {
                    cls.lookup("__str__").or_else(|| cls.lookup("__repr__"))
                };
                if let Some(f) = user {
                    let r = self.call_value(&f, vec![v.clone()], vec![])?;
                    match &r {
                        Str(s) => out.push_str(s),
                        other => {
                            return Err(type_err(format!(
                                "__{}__ returned non-string (type {})",
                                if is_repr { "repr" } else { "str" },
                                other.type_name()
                            )))
                        }
                    }
                } else if super::exc::is_exc_class(&cls) {
                    let s = super::exc::exc_str(self, v)?;
                    if is_repr {
                        let args = inst.attr("args");
                        let inner = match &args {
                            Some(Tuple(t)) if t.len() == 1 => self.repr(&t[0])?,
                            Some(Tuple(t)) => {
                                let r = self.repr(&Tuple(t.clone()))?;
                                r[1..r.len() - 1].trim_end_matches(',').to_string()
                            }
                            _ => String::new(),
                        };
                        out.push_str(&format!("{}({})", cls.name, inner));
                    } else {
                        out.push_str(&s);
                    }
                } else {
                    out.push_str(&format!("<{} object at {:#x}>", cls.name, v.ptr_id()));
                }
            }
            Module(m) => out.push_str(&format!("<module '{}'>", m.name)),
            Iter(_) => match super::gen::as_gen(v) {
                Some(g) => out.push_str(&format!(
                    "<generator object {} at {:#x}>",
                    g.func.proto.name,
                    v.ptr_id()
                )),
                _ => out.push_str(&format!("<iterator object at {:#x}>", v.ptr_id())),
            },
            Super(s) => out.push_str(&format!("<super: <class '{}'>>", s.0.name)),
            Cell(_) | Unbound => out.push_str("<cell>"),
        }
        Ok(())
    }

    /// `format(v, spec)` (f-string fields).
    pub fn format_spec(&mut self, v: &Value, spec: &str) -> R<String> {
        let arg = match v {
            Value::Int(i) => FmtArg::Int(*i),
            Value::SymInt(s) => FmtArg::Int(s.concrete()),
            Value::SymFloat(s) => FmtArg::Float(s.concrete()),
            Value::Bool(b) => FmtArg::Bool(*b),
            Value::Float(f) => FmtArg::Float(*f),
            Value::Str(s) => return format_value(FmtArg::Str(s), spec).map_err(fmt_err),
            // PyTorch's `Tensor.__format__`: a 0-d tensor formats its value.
            Value::Tensor(t) => {
                return crate::compile::runtime::printing::tensor_text(t, None, Some(spec))
                    .map_err(fmt_err)
            }
            Value::Instance(_) => {
                if let Some(r) = self.call_dunder(v, "__format__", &[Value::str(spec)])? {
                    return self.str_of(&r);
                }
                let s = self.str_of(v)?;
                return format_value(FmtArg::Str(&s), spec).map_err(fmt_err);
            }
            _ => {
                if spec.is_empty() {
                    return self.str_of(v);
                }
                return Err(type_err(format!(
                    "unsupported format string passed to {}.__format__",
                    v.type_name()
                )));
            }
        };
        format_value(arg, spec).map_err(fmt_err)
    }
}
