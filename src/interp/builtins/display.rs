//! `display(obj)` and the rich-display protocol: an object's MIME bundle is `text/plain`
//! from its repr plus `text/html`, `text/markdown`, `image/svg+xml` and `image/png` from
//! the `_repr_html_`, `_repr_markdown_`, `_repr_svg_` and `_repr_png_` methods its class
//! defines (IPython's names). A host front end (the Jupyter kernel) installs a display
//! hook with `Engine::set_display`; without one, `display` prints the repr.

use super::{native, no_kw};
use crate::error::ErrorKind;
use crate::interp::value::Value;
use crate::interp::{type_err, Interp, R};
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// One rich output: (MIME type, data) pairs, `text/plain` first; binary formats
/// (`image/png`) are base64 text, as the Jupyter protocol carries them.
pub type MimeBundle = Vec<(String, String)>;

/// Where `display(...)` and `plt.show()` send rich outputs (see `Engine::set_display`).
pub type DisplayHook = Box<dyn FnMut(MimeBundle)>;

/// The rich-display methods and the MIME type of what each returns.
const RICH: &[(&str, &str)] = &[
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
];

pub fn register(names: &mut super::Names) {
    names.insert("display".into(), native("display", display));
}

impl Interp {
    /// The MIME bundle of `v`: its repr, plus what its rich-display methods return (a
    /// method returning None adds nothing, as in IPython).
    pub fn mime_bundle(&mut self, v: &Value) -> R<MimeBundle> {
        let mut out = vec![("text/plain".to_string(), self.repr(v)?)];
        if !matches!(v, Value::Instance(_)) {
            return Ok(out);
        }
        for (meth, mime) in RICH {
            let f = match self.get_attr(v, meth) {
                Ok(f) => f,
                Err(e) if e.error.kind == ErrorKind::AttributeError => continue,
                Err(e) => return Err(e),
            };
            match &self.call_value(&f, Vec::new(), Vec::new())? {
                Value::None => {}
                Value::Str(s) => out.push((mime.to_string(), s.to_string())),
                other => {
                    return Err(type_err(format!(
                        "{meth} must return a str or None, not {}",
                        other.type_name()
                    )))
                }
            }
        }
        Ok(out)
    }

    /// Whether a front end shows rich outputs (`plt.show()` displays figures then).
    pub fn has_display(&self) -> bool {
        self.display.is_some()
    }
}

/// `display(*objs)`: each object's MIME bundle to the display hook, or its repr printed
/// on a line of its own when the host has none (a terminal).
fn display(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("display", kw, &[])?;
    for v in args {
        let bundle = me.mime_bundle(v)?;
        match me.display.as_mut() {
            Some(hook) => hook(bundle),
            None => {
                let text = format!("{}\n", bundle[0].1);
                me.write(&text);
            }
        }
    }
    Ok(Value::None)
}

impl Interp {
    /// What a notebook's inspector shows for `v` (Shift-Tab): its type, the signature of a
    /// function, method or class (`__init__`'s), the docstring, and its repr.
    pub fn inspect_text(&mut self, v: &Value) -> R<String> {
        let mut out = format!("Type:      {}\n", v.type_name());
        let func = match v {
            Value::Func(f) => Some((f.clone(), false)),
            Value::BoundMethod(b) => match &b.1 {
                Value::Func(f) => Some((f.clone(), true)),
                _ => None,
            },
            Value::Class(c) => match c.dict.borrow().get("__init__") {
                Some(Value::Func(f)) => Some((f.clone(), true)),
                _ => None,
            },
            _ => None,
        };
        if let Some((f, bound)) = func {
            let name = match v {
                Value::Class(c) => c.name.clone(),
                _ => f.proto.name.clone(),
            };
            out += &format!("Signature: {name}({})\n", self.params_text(&f, bound)?);
            if let Value::Str(doc) = &f.doc() {
                out += &format!("Docstring: {doc}\n");
            }
        }
        out += &format!("Repr:      {}\n", self.repr(v)?);
        Ok(out)
    }

    /// `a, b=2, *args, c=None, **kw` (the first parameter left out of a bound method).
    fn params_text(&mut self, f: &crate::interp::value::Function, bound: bool) -> R<String> {
        let p = &f.proto;
        let mut parts = Vec::new();
        let first_default = p.params.len().saturating_sub(f.defaults.len());
        for (i, name) in p.params.iter().enumerate() {
            if bound && i == 0 {
                continue;
            }
            match i.checked_sub(first_default).and_then(|k| f.defaults.get(k)) {
                Some(d) => parts.push(format!("{name}={}", self.repr(d)?)),
                None => parts.push(name.to_string()),
            }
        }
        if p.vararg.is_some() {
            parts.push("*args".into());
        } else if !p.kwonly.is_empty() {
            parts.push("*".into());
        }
        for (k, (name, _)) in p.kwonly.iter().enumerate() {
            match f.kwdefaults.get(k).and_then(|d| d.as_ref()) {
                Some(d) => parts.push(format!("{name}={}", self.repr(d)?)),
                None => parts.push(name.to_string()),
            }
        }
        if p.kwarg.is_some() {
            parts.push("**kwargs".into());
        }
        Ok(parts.join(", "))
    }
}
