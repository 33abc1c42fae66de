//! `property`, `staticmethod` and `classmethod`: objects that change what reading (or
//! writing) a class attribute gives. Each is an instance of a built-in class whose
//! attributes hold the functions (`fget`/`fset`/`fdel`, or `__func__`).

use super::builtins::pyfuncs::native_class as class;
use super::method_cache::Hooks;
use super::value::{Class, Instance, Value};
use super::{err, type_err, Interp, R};
use crate::error::ErrorKind;
use std::rc::Rc;

/// The three descriptor classes.
pub struct Descriptors {
    property: Rc<Class>,
    staticmethod: Rc<Class>,
    classmethod: Rc<Class>,
}

/// What a class attribute is, for attribute access.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Descr {
    Property,
    Static,
    ClassMethod,
}

type Kw<'a> = &'a [(Rc<str>, Value)];

fn me(args: &[Value]) -> R<&Rc<Instance>> {
    match args.first() {
        Some(Value::Instance(i)) => Ok(i),
        _ => Err(type_err("descriptor method needs an instance")),
    }
}

fn field(i: &Instance, name: &str) -> Value {
    i.attr(name).unwrap_or(Value::None)
}

/// `property(fget=None, fset=None, fdel=None, doc=None)`.
fn property_init(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let inst = me(args)?;
    let names = ["fget", "fset", "fdel", "doc"];
    if args.len() > 5 {
        return Err(type_err(format!(
            "property() takes at most 4 arguments ({} given)",
            args.len() - 1
        )));
    }
    let mut d = inst.attrs.borrow_mut();
    for (i, n) in names.iter().enumerate() {
        d.set((*n).into(), args.get(i + 1).cloned().unwrap_or(Value::None));
    }
    for (k, v) in kw {
        if !names.contains(&&**k) {
            return Err(type_err(format!(
                "property() got an unexpected keyword argument '{k}'"
            )));
        }
        d.set(k.clone(), v.clone());
    }
    Ok(Value::None)
}

/// `prop.setter(f)` and friends: a copy of the property with one function replaced.
fn property_with(me_: &mut Interp, args: &[Value], which: &str) -> R<Value> {
    let inst = me(args)?;
    let [_, f] = args else {
        return Err(type_err(format!(
            "{which}() takes exactly one argument ({} given)",
            args.len().saturating_sub(1)
        )));
    };
    let vals: Vec<Value> = ["fget", "fset", "fdel", "doc"]
        .iter()
        .map(|n| {
            if *n == which {
                f.clone()
            } else {
                field(inst, n)
            }
        })
        .collect();
    let cls = inst.class.clone();
    me_.instantiate(&cls, vals, vec![])
}

fn prop_getter(me_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    property_with(me_, args, "fget")
}
fn prop_setter(me_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    property_with(me_, args, "fset")
}
fn prop_deleter(me_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    property_with(me_, args, "fdel")
}

/// `staticmethod(f)` / `classmethod(f)`.
fn wrap_init(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let inst = me(args)?;
    if args.len() != 2 || !kw.is_empty() {
        return Err(type_err(format!(
            "{} expected 1 argument, got {}",
            inst.class.name,
            args.len().saturating_sub(1)
        )));
    }
    inst.put_attr("__func__", args[1].clone());
    Ok(Value::None)
}

impl Descriptors {
    /// Creates the classes and registers them as builtins.
    pub fn new(names: &mut crate::interp::builtins::Names) -> Descriptors {
        let property = class(
            "property",
            &[
                ("__init__", property_init),
                ("getter", prop_getter),
                ("setter", prop_setter),
                ("deleter", prop_deleter),
            ],
        );
        let staticmethod = class("staticmethod", &[("__init__", wrap_init)]);
        let classmethod = class("classmethod", &[("__init__", wrap_init)]);
        for c in [&property, &staticmethod, &classmethod] {
            names.insert(c.name.clone(), Value::Class(c.clone()));
        }
        Descriptors {
            property,
            staticmethod,
            classmethod,
        }
    }

    /// The kind of a descriptor instance.
    pub fn kind(&self, v: &Value) -> Option<Descr> {
        let Value::Instance(i) = v else {
            return None;
        };
        let c = &i.class;
        if c.is_subclass(&self.property) {
            Some(Descr::Property)
        } else if Rc::ptr_eq(c, &self.staticmethod) {
            Some(Descr::Static)
        } else if Rc::ptr_eq(c, &self.classmethod) {
            Some(Descr::ClassMethod)
        } else {
            None
        }
    }
}

fn no_fn(attr: &str, obj: &Value, what: &str) -> super::Exc {
    err(
        ErrorKind::AttributeError,
        format!(
            "property '{attr}' of '{}' object has no {what}",
            obj.type_name()
        ),
    )
}

impl Interp {
    /// Reads class attribute `v` (a descriptor of kind `d`) through `obj` (an instance, or
    /// `None` when read from the class `cls` itself).
    pub fn descr_get(
        &mut self,
        d: Descr,
        v: &Value,
        obj: Option<&Value>,
        cls: &Rc<Class>,
        name: &str,
    ) -> R<Value> {
        let Value::Instance(i) = v else {
            return Ok(v.clone());
        };
        match (d, obj) {
            (Descr::Property, None) => Ok(v.clone()),
            (Descr::Property, Some(o)) => match field(i, "fget") {
                Value::None => Err(no_fn(name, o, "getter")),
                f => self.call_value(&f, vec![o.clone()], vec![]),
            },
            (Descr::Static, _) => Ok(field(i, "__func__")),
            (Descr::ClassMethod, _) => Ok(Value::BoundMethod(Rc::new((
                Value::Class(cls.clone()),
                field(i, "__func__"),
            )))),
        }
    }

    /// `obj.name = v` / `del obj.name` where the class has a property `name`: calls its
    /// setter (`Some(v)`) or deleter (`None`). `Ok(false)` when `name` is no property.
    /// Whether `c` or a class of its MRO holds a property (only then can a plain
    /// attribute store reach a setter) or defines `__setattr__`/`__delattr__`; memoized
    /// per class until any class dict changes.
    #[inline]
    pub fn hooks(&self, c: &Class) -> Hooks {
        if let Some(v) = c.methods.hooks() {
            return v;
        }
        self.find_hooks(c)
    }

    fn find_hooks(&self, c: &Class) -> Hooks {
        let mut h = Hooks::default();
        for k in std::iter::once(c).chain(c.mro.iter().map(|k| &**k)) {
            let Ok(d) = k.dict.try_borrow() else {
                // a class dict being changed right now: assume every hook, memoize nothing
                return Hooks {
                    property: true,
                    setattr: true,
                    delattr: true,
                };
            };
            h.property |= d
                .values()
                .any(|v| self.b.descr.kind(v) == Some(Descr::Property));
            h.setattr |= d.contains_key("__setattr__");
            h.delattr |= d.contains_key("__delattr__");
        }
        c.methods.set_hooks(h);
        h
    }

    pub fn property_set(&mut self, obj: &Value, name: &str, v: Option<Value>) -> R<bool> {
        let Value::Instance(inst) = obj else {
            return Ok(false);
        };
        let Some(attr) = inst.class.lookup(name) else {
            return Ok(false);
        };
        if self.b.descr.kind(&attr) != Some(Descr::Property) {
            return Ok(false);
        }
        let Value::Instance(p) = &attr else {
            return Ok(false);
        };
        let (key, what) = match v {
            Some(_) => ("fset", "setter"),
            None => ("fdel", "deleter"),
        };
        let f = field(p, key);
        if matches!(f, Value::None) {
            return Err(no_fn(name, obj, what));
        }
        let mut args = vec![obj.clone()];
        args.extend(v);
        self.call_value(&f, args, vec![])?;
        Ok(true)
    }
}
