//! Classes and attributes: class creation, attribute get/set/del, method binding.

use super::tree::ClassProto;
use super::value::{discard, AttrHint, Class, ClassKind, Instance, Layout, TypeTag, Value};
use super::{at, err, type_err, Interp, R};
use crate::error::ErrorKind;
use crate::interp::capture::guards::Origin;
use std::cell::RefCell;
use std::rc::Rc;

fn no_attr(obj: &Value, name: &str) -> super::Exc {
    err(
        ErrorKind::AttributeError,
        format!("'{}' object has no attribute '{}'", obj.type_name(), name),
    )
}

/// `object.__init__(self)`, reached through `super().__init__()` from a class whose
/// bases define no `__init__` (as in Python, it takes no further arguments).
fn object_init(_: &mut Interp, args: &[Value], kw: &[(Rc<str>, Value)]) -> R<Value> {
    if args.len() != 1 || !kw.is_empty() {
        return Err(type_err(
            "object.__init__() takes exactly one argument (the instance to initialize)",
        ));
    }
    Ok(Value::None)
}

/// `object.__setattr__(obj, name, value)`: the plain store, bypassing the class's own
/// `__setattr__` (what `super().__setattr__` reaches too).
pub fn object_setattr(me: &mut Interp, args: &[Value], kw: &[(Rc<str>, Value)]) -> R<Value> {
    match (args, kw) {
        ([obj, Value::Str(name), v], []) => me.set_attr_plain(obj, name, v.clone()),
        ([_, n, _], []) => Err(attr_name_err(n)),
        _ => Err(type_err(format!(
            "expected 3 arguments, got {}",
            args.len() + kw.len()
        ))),
    }
    .map(|()| Value::None)
}

/// `object.__delattr__(obj, name)`.
pub fn object_delattr(me: &mut Interp, args: &[Value], kw: &[(Rc<str>, Value)]) -> R<Value> {
    match (args, kw) {
        ([obj, Value::Str(name)], []) => me.del_attr_plain(obj, name),
        ([_, n], []) => Err(attr_name_err(n)),
        _ => Err(type_err(format!(
            "expected 2 arguments, got {}",
            args.len() + kw.len()
        ))),
    }
    .map(|()| Value::None)
}

fn attr_name_err(n: &Value) -> super::Exc {
    type_err(format!(
        "attribute name must be string, not '{}'",
        n.type_name()
    ))
}

/// Binds a class attribute found on an instance: functions become bound methods.
fn bind(obj: &Value, v: Value) -> Value {
    match v {
        Value::Func(_) | Value::Native(_) | Value::Compiled(_) => {
            Value::BoundMethod(Rc::new((obj.clone(), v)))
        }
        other => other,
    }
}

impl Interp {
    pub fn exec_class(&mut self, c: &Rc<ClassProto>) -> R<()> {
        let mut decs = Vec::with_capacity(c.decorators.len());
        for d in &c.decorators {
            decs.push(self.eval(d)?);
        }
        let mut bases = Vec::with_capacity(c.bases.len());
        for b in &c.bases {
            match &self.eval(b)? {
                Value::Class(k) => match k.kind {
                    ClassKind::Builtin(TypeTag::Object) => {}
                    // a tuple-like class (torch.return_types, namedtuple) that provides
                    // the sequence methods itself: `isinstance(x, tuple)` holds
                    ClassKind::Builtin(TypeTag::Tuple) => bases.push(k.clone()),
                    ClassKind::Builtin(_) => {
                        return Err(at(
                            type_err(format!(
                                "subclassing the built-in type '{}' is not supported",
                                k.name
                            )),
                            b.span,
                        ))
                    }
                    _ => bases.push(k.clone()),
                },
                other => {
                    return Err(at(
                        type_err(format!(
                            "base class must be a class, not '{}'",
                            other.type_name()
                        )),
                        b.span,
                    ))
                }
            }
        }
        let span = c.bases.first().map(|b| b.span);
        let mro = super::mro::c3(&bases).map_err(|e| match span {
            Some(s) => at(e, s),
            None => e,
        })?;
        let base = bases.first().cloned();
        let ns = Rc::new(RefCell::new(super::value::NameMap::default()));
        self.class_ns.push(ns.clone());
        let r = self.exec_block(&c.body);
        self.class_ns.pop();
        r?;
        let mut dict = std::mem::take(&mut *ns.borrow_mut());
        if dict.contains_key("__eq__") && !dict.contains_key("__hash__") {
            // as CPython: defining `__eq__` alone makes instances unhashable
            dict.insert("__hash__".into(), Value::None);
        }
        let layout = base
            .as_ref()
            .map_or_else(Layout::root, |b| b.layout.clone());
        let cls = Rc::new(Class {
            name: c.name.clone(),
            base,
            mro,
            dict: RefCell::new(dict),
            kind: ClassKind::User,
            gc: Default::default(),
            methods: Default::default(),
            layout,
        });
        super::method_cache::classes_changed();
        super::gc::track_class(&cls);
        for v in cls.dict.borrow().values() {
            match v {
                Value::Func(f) => *f.owner.borrow_mut() = Some(Rc::downgrade(&cls)),
                // the functions of a property/staticmethod/classmethod (for `super()`)
                Value::Instance(i) if self.b.descr.kind(v).is_some() => {
                    for (_, x) in i.attr_items() {
                        if let Value::Func(f) = &x {
                            *f.owner.borrow_mut() = Some(Rc::downgrade(&cls));
                        }
                    }
                }
                _ => {}
            }
        }
        let mut v = Value::Class(cls);
        for (d, ex) in decs.iter().zip(c.decorators.iter()).rev() {
            v = self
                .call_value(d, vec![v], Vec::new())
                .map_err(|x| at(x, ex.span))?;
        }
        self.store(&c.store, v)
    }

    #[inline]
    pub fn get_attr(&mut self, obj: &Value, name: &str) -> R<Value> {
        self.find_attr(obj, name)
            .map_err(|e| super::suggest::note_attr(e, obj, name))
    }

    /// `obj.name` where `obj` (an instance of `cls`) has no attribute `name` of its own
    /// and `cls`'s chain holds `v` under `name`: a bound method, a descriptor's result,
    /// or `v` itself.
    pub(crate) fn class_attr_of(
        &mut self,
        obj: &Value,
        cls: &Rc<Class>,
        v: Value,
        name: &str,
    ) -> R<Value> {
        if let Some(d) = self.b.descr.kind(&v) {
            return self.descr_get(d, &v, Some(obj), cls, name);
        }
        Ok(bind(obj, v))
    }

    fn find_attr(&mut self, obj: &Value, name: &str) -> R<Value> {
        match obj {
            Value::Instance(inst) => {
                if inst.attrs.borrow().is_dict() && self.hooks(&inst.class).property {
                    // a property (a data descriptor) wins over the instance's dict
                    if let Some(v) = inst.class.lookup(name) {
                        if self.b.descr.kind(&v) == Some(super::descr::Descr::Property) {
                            return self.class_attr_of(obj, &inst.class, v, name);
                        }
                    }
                }
                if let Some(v) = inst.attr(name) {
                    if crate::compile::capture::trace::active() {
                        let origin = || Origin::Attr(inst.clone(), name.into());
                        return Ok(crate::interp::capture::guards::load(origin, v));
                    }
                    return Ok(v);
                }
                if crate::compile::capture::trace::active() {
                    crate::interp::capture::guards::note_absent(inst, name);
                }
                if let Some(v) = inst.class.lookup(name) {
                    return self.class_attr_of(obj, &inst.class, v, name);
                }
                if name == "__class__" {
                    return Ok(Value::Class(inst.class.clone()));
                }
                if name == "__dict__" {
                    return Ok(inst.attr_dict());
                }
                if let Some(ga) = inst.class.lookup("__getattr__") {
                    return self.call_value(&ga, vec![obj.clone(), Value::str(name)], vec![]);
                }
                Err(no_attr(obj, name))
            }
            Value::Class(c) => {
                if let Some(v) = c.lookup(name) {
                    if let Some(d) = self.b.descr.kind(&v) {
                        return self.descr_get(d, &v, None, c, name);
                    }
                    return Ok(v);
                }
                match name {
                    "__name__" | "__qualname__" => Ok(Value::Str(c.name.clone())),
                    "__base__" => Ok(c.base.clone().map(Value::Class).unwrap_or(Value::None)),
                    "__mro__" => Ok(super::mro::mro_tuple(c, &self.b.object)),
                    _ => Err(err(
                        ErrorKind::AttributeError,
                        format!("type object '{}' has no attribute '{}'", c.name, name),
                    )),
                }
            }
            Value::Module(m) => m.get(name).ok_or_else(|| {
                err(
                    ErrorKind::AttributeError,
                    format!("module '{}' has no attribute '{}'", m.name, name),
                )
            }),
            Value::Super(s) => {
                let start = match &s.1 {
                    Value::Instance(i) => i.class.clone(),
                    Value::Class(c) => c.clone(),
                    _ => s.0.clone(),
                };
                let found = super::mro::super_lookup(&s.0, &start, name);
                match found {
                    Some(v) if self.b.descr.kind(&v).is_some() => {
                        let (obj, cls) = match &s.1 {
                            Value::Instance(i) => (Some(&s.1), i.class.clone()),
                            Value::Class(c) => (None, c.clone()),
                            _ => (None, s.0.clone()),
                        };
                        let d = self.b.descr.kind(&v).unwrap_or(super::descr::Descr::Static);
                        self.descr_get(d, &v, obj, &cls, name)
                    }
                    Some(v) => Ok(bind(&s.1, v)),
                    None if name == "__init__" => Ok(bind(
                        &s.1,
                        super::builtins::native("object.__init__", object_init),
                    )),
                    None if matches!(name, "__setattr__" | "__delattr__") => {
                        let o = self.b.object.lookup(name).unwrap_or(Value::None);
                        Ok(bind(&s.1, o))
                    }
                    None => Err(err(
                        ErrorKind::AttributeError,
                        format!("'super' object has no attribute '{name}'"),
                    )),
                }
            }
            Value::Func(f) => {
                if let Some(v) = f.attrs.borrow().as_ref().and_then(|a| a.get(name)) {
                    return Ok(v.clone());
                }
                match name {
                    "__name__" | "__qualname__" => Ok(Value::Str(f.proto.name.clone())),
                    "__doc__" => Ok(f.doc()),
                    "__module__" => Ok(Value::Str(f.globals.name.clone())),
                    "__dict__" => {
                        // the computed names live outside `__dict__`, as in CPython
                        let computed = ["__name__", "__qualname__", "__doc__", "__module__"];
                        let attrs = f.attrs.borrow();
                        let m = attrs.iter().flat_map(|a| a.iter());
                        let m = m.filter(|(k, _)| !computed.contains(&&***k));
                        let m =
                            m.map(|(k, v)| (super::value::Key(Value::Str(k.clone())), v.clone()));
                        Ok(Value::dict(m.collect()))
                    }
                    _ => Err(no_attr(obj, name)),
                }
            }
            // `compile(module)` passes the module's attributes through (`_orig_mod`: the
            // module itself, as in PyTorch).
            Value::Compiled(cf) => match (&cf.module, name) {
                (Some(m), "_orig_mod") => Ok(m.clone()),
                (Some(m), _) => {
                    let m = m.clone();
                    self.find_attr(&m, name)
                }
                (None, _) => Err(no_attr(obj, name)),
            },
            Value::Native(f) => match name {
                "__name__" => Ok(Value::Str(f.name.clone())),
                _ => Err(no_attr(obj, name)),
            },
            _ => {
                if let Some(v) = self.builtin_attr(obj, name)? {
                    return Ok(v);
                }
                if super::builtins::has_method(obj, name) {
                    return Ok(Value::BuiltinMethod(Rc::new((obj.clone(), name.into()))));
                }
                Err(no_attr(obj, name))
            }
        }
    }

    /// `obj.name = v` at a store site: for instances, the site's `hint` (see
    /// `AttrHint`) finds an existing attribute (or the layout after adding it) without
    /// a scan of the names.
    pub fn store_attr(&mut self, obj: &Value, name: &Rc<str>, v: Value, hint: &AttrHint) -> R<()> {
        let Value::Instance(inst) = obj else {
            return self.set_attr(obj, name, v);
        };
        if crate::compile::capture::trace::active() {
            // capture must see the store (an outside mutation falls back to eager)
            return self.set_attr(obj, name, v);
        }
        let hooks = self.hooks(&inst.class);
        if hooks.setattr {
            return self.set_attr(obj, name, v);
        }
        let mut d = inst.attrs.borrow_mut();
        let v = match d.replace_hinted(hint, v) {
            Ok(old) => {
                drop(d);
                discard(old);
                return Ok(());
            }
            Err(v) => v,
        };
        if (hooks.property && !d.contains(name)) || &**name == "__dict__" {
            drop(d);
            return self.set_attr(obj, name, v);
        }
        let old = d.set_hinted(name, v, hint);
        drop(d);
        drop(old);
        Ok(())
    }

    pub fn set_attr(&mut self, obj: &Value, name: &Rc<str>, v: Value) -> R<()> {
        if let Value::Compiled(cf) = obj {
            if let Some(m) = cf.module.clone() {
                return self.set_attr(&m, name, v);
            }
        }
        if let Value::Instance(inst) = obj {
            if self.hooks(&inst.class).setattr {
                if let Some(f) = inst.class.lookup("__setattr__") {
                    let args = vec![obj.clone(), Value::Str(name.clone()), v];
                    return self.call_value(&f, args, vec![]).map(discard);
                }
            }
        }
        self.set_attr_plain(obj, name, v)
    }

    /// `object.__setattr__`: the store without the class's `__setattr__`.
    pub fn set_attr_plain(&mut self, obj: &Value, name: &Rc<str>, v: Value) -> R<()> {
        match obj {
            Value::Instance(inst) => {
                if crate::compile::capture::trace::note_mutation(
                    Rc::as_ptr(inst) as usize,
                    "attribute store",
                ) {
                    return Err(super::err(
                        ErrorKind::RuntimeError,
                        "attribute store in the branch not taken",
                    ));
                }
                if !inst.attrs.borrow().contains(name)
                    && self.property_set(obj, name, Some(v.clone()))?
                {
                    return Ok(());
                }
                if &**name == "__dict__" {
                    return set_dict(inst, v);
                }
                drop(inst.put_attr(name.clone(), v));
                Ok(())
            }
            Value::Class(c) if c.kind == ClassKind::User => {
                if let Value::Func(f) = &v {
                    *f.owner.borrow_mut() = Some(Rc::downgrade(c));
                }
                c.dict.borrow_mut().insert(name.clone(), v);
                super::method_cache::classes_changed();
                Ok(())
            }
            Value::Module(m) => {
                m.set(name, v);
                Ok(())
            }
            Value::Func(f) => {
                let mut attrs = f.attrs.borrow_mut();
                attrs
                    .get_or_insert_with(Default::default)
                    .insert(name.clone(), v);
                Ok(())
            }
            Value::Tensor(t) => super::builtins::tensor_methods::set_tensor_attr(t, name, &v),
            _ => Err(err(
                ErrorKind::AttributeError,
                format!(
                    "'{}' object attribute '{}' is read-only",
                    obj.type_name(),
                    name
                ),
            )),
        }
    }

    pub fn del_attr(&mut self, obj: &Value, name: &str) -> R<()> {
        if let Value::Instance(inst) = obj {
            if self.hooks(&inst.class).delattr {
                if let Some(f) = inst.class.lookup("__delattr__") {
                    let args = vec![obj.clone(), Value::str(name)];
                    return self.call_value(&f, args, vec![]).map(discard);
                }
            }
        }
        self.del_attr_plain(obj, name)
    }

    /// `object.__delattr__`: the delete without the class's `__delattr__`.
    pub fn del_attr_plain(&mut self, obj: &Value, name: &str) -> R<()> {
        if self.property_set(obj, name, None)? {
            return Ok(());
        }
        let removed = match obj {
            Value::Instance(inst) => inst.take_attr(name).is_some(),
            Value::Class(c) if c.kind == ClassKind::User => {
                super::method_cache::classes_changed();
                c.dict.borrow_mut().shift_remove(name).is_some()
            }
            _ => false,
        };
        if removed {
            Ok(())
        } else {
            Err(no_attr(obj, name))
        }
    }

    /// `isinstance(v, cls)` for one class.
    pub fn is_instance(&self, v: &Value, cls: &Rc<Class>) -> bool {
        let vc = self.class_of(v);
        vc.is_subclass(cls)
            || (matches!(v, Value::Bool(_)) && cls.kind == ClassKind::Builtin(TypeTag::Int))
    }

    /// The class object of any value (`type(v)`).
    pub fn class_of(&self, v: &Value) -> Rc<Class> {
        let tag = match v {
            Value::Instance(i) => return i.class.clone(),
            Value::None => TypeTag::NoneType,
            Value::Bool(_) => TypeTag::Bool,
            Value::Int(_) | Value::SymInt(_) => TypeTag::Int,
            Value::Float(_) | Value::SymFloat(_) => TypeTag::Float,
            Value::Str(_) => TypeTag::Str,
            Value::List(_) => TypeTag::List,
            Value::Tuple(_) => TypeTag::Tuple,
            Value::Size(_) => TypeTag::Size,
            Value::Dict(_) => TypeTag::Dict,
            Value::Set(_) => TypeTag::Set,
            Value::FrozenSet(_) => TypeTag::FrozenSet,
            Value::Range(_) => TypeTag::Range,
            Value::Slice(_) => TypeTag::Slice,
            Value::Ellipsis => TypeTag::Ellipsis,
            Value::NotImplemented => TypeTag::NotImplementedType,
            Value::Func(_) | Value::Compiled(_) => TypeTag::Function,
            Value::Graph(_) => TypeTag::Object,
            Value::Native(_) => TypeTag::BuiltinFunction,
            Value::BoundMethod(_) | Value::BuiltinMethod(_) => TypeTag::Method,
            Value::Class(_) => TypeTag::Type,
            Value::Module(_) => TypeTag::Module,
            Value::Iter(_) if super::gen::as_gen(v).is_some() => TypeTag::Generator,
            Value::Iter(_) => TypeTag::Iterator,
            Value::Super(_) => TypeTag::Super,
            Value::Tensor(_) => TypeTag::Tensor,
            Value::DType(_) => TypeTag::DType,
            Value::GradMode(_) => TypeTag::GradMode,
            Value::GradFn(g) => return super::builtins::grad_fn::class_of(g),
            Value::Cell(_) | Value::Unbound => TypeTag::Object,
        };
        self.b.type_class(tag)
    }
}

/// `obj.__dict__ = v`: a dict becomes the instance's attribute dict (as in CPython).
fn set_dict(inst: &Instance, v: Value) -> R<()> {
    if !matches!(v, Value::Dict(_)) {
        return Err(type_err(format!(
            "__dict__ must be set to a dictionary, not a '{}'",
            v.type_name()
        )));
    }
    let old = inst.attrs.borrow_mut().replace_dict(v);
    drop(old);
    Ok(())
}
