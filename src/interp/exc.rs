//! Exceptions: raising, `try/except/else/finally`, `with`, exception objects.

use super::tree::{Ex, St, Target, TryBlock};
use super::value::{Class, ClassKind, Instance, Value};
use super::{at, err, type_err, Exc, ExcInner, Flow, Interp, R};
use crate::error::{Error, ErrorKind, TraceFrame};
use std::rc::Rc;

impl Interp {
    /// The class of a propagating exception.
    pub fn exc_class(&self, e: &ExcInner) -> Rc<Class> {
        if let Some(Value::Instance(i)) = &e.value {
            return i.class.clone();
        }
        self.b.exc_class(e.error.kind)
    }

    /// The exception object of a propagating exception (created on first use).
    pub fn exc_value(&mut self, e: &mut ExcInner) -> Value {
        if let Some(v) = &e.value {
            return v.clone();
        }
        let cls = self.b.exc_class(e.error.kind);
        let args = if e.error.message.is_empty() {
            vec![]
        } else {
            vec![Value::str(&e.error.message)]
        };
        let v = new_exc_instance(&cls, args);
        e.value = Some(v.clone());
        v
    }

    /// Builds the propagating exception for `raise x`.
    pub fn raise(&mut self, e: Option<&Ex>, cause: Option<&Ex>) -> R<Exc> {
        let Some(e) = e else {
            return match self.handling.last() {
                Some(cur) => Ok(Box::new(cur.clone())),
                None => Err(err(
                    ErrorKind::RuntimeError,
                    "No active exception to reraise",
                )),
            };
        };
        let mut v = self.eval(e)?;
        if let Some(c) = cause {
            self.eval(c)?;
        }
        if let Value::Class(c) = &v {
            if c.exc_kind().is_none() {
                return Err(at(
                    type_err("exceptions must derive from BaseException"),
                    e.span,
                ));
            }
            v = self
                .instantiate(&c.clone(), vec![], vec![])
                .map_err(|x| at(x, e.span))?;
        }
        let exc = self.exc_from_value(v).map_err(|x| at(x, e.span))?;
        Ok(at(exc, e.span))
    }

    /// Wraps an exception instance as a propagating exception.
    pub fn exc_from_value(&mut self, v: Value) -> R<Exc> {
        let Value::Instance(inst) = &v else {
            return Err(type_err("exceptions must derive from BaseException"));
        };
        let Some(kind) = inst.class.exc_kind() else {
            return Err(type_err("exceptions must derive from BaseException"));
        };
        let message = self.str_of(&v)?;
        let mut error = Error::new(kind, message, None);
        error.type_name = inst.class.name.clone();
        Ok(Box::new(ExcInner {
            error,
            value: Some(v),
            pending: None,
            frames: Vec::new(),
            missing: None,
        }))
    }

    pub(crate) fn handler_matches(&mut self, typ: &Value, cls: &Rc<Class>) -> R<bool> {
        match typ {
            Value::Class(c) => Ok(c.exc_kind().is_some() && cls.is_subclass(c)),
            Value::Tuple(ts) => {
                for t in ts.iter() {
                    if self.handler_matches(t, cls)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            _ => Err(type_err(
                "catching classes that do not inherit from BaseException is not allowed",
            )),
        }
    }

    pub fn exec_try(&mut self, t: &TryBlock) -> R<Flow> {
        let r = match self.exec_block(&t.body) {
            Ok(Flow::Normal) => self.exec_block(&t.orelse),
            Ok(f) => Ok(f),
            Err(e) => self.handle(t, e),
        };
        if t.finalbody.is_empty() {
            return r;
        }
        // calls in the `finally` body reuse `ret`: keep a pending return value aside
        let pending = matches!(r, Ok(Flow::Return)).then(|| std::mem::take(&mut self.ret));
        match self.exec_block(&t.finalbody)? {
            Flow::Normal => {
                if let Some(v) = pending {
                    self.ret = v;
                }
                r
            }
            f => Ok(f),
        }
    }

    fn handle(&mut self, t: &TryBlock, mut e: Exc) -> R<Flow> {
        if e.error.kind == ErrorKind::LimitExceeded {
            return Err(e);
        }
        let Some(i) = self.find_handler(t, &mut e)? else {
            return Err(e);
        };
        let h = &t.handlers[i];
        self.handling.push(*e);
        let r = self.exec_block(&h.body);
        self.handling.pop();
        if let Some(Target::Place(p)) = &h.name {
            let _ = self.store_place(p, Value::Unbound);
        }
        r
    }

    /// The first `except` clause of `t` that matches `e` (its index), with `e`'s value
    /// bound to the clause's name; `None` when no clause matches.
    pub(super) fn find_handler(&mut self, t: &TryBlock, e: &mut Exc) -> R<Option<usize>> {
        let cls = self.exc_class(e);
        for (i, h) in t.handlers.iter().enumerate() {
            let matched = match &h.typ {
                None => true,
                Some(te) => {
                    let tv = self.eval(te)?;
                    self.handler_matches(&tv, &cls)
                        .map_err(|x| at(x, te.span))?
                }
            };
            if !matched {
                continue;
            }
            let v = self.exc_value(e);
            if let Some(name) = &h.name {
                self.store(name, v)?;
            }
            return Ok(Some(i));
        }
        Ok(None)
    }

    /// Evaluates a `with` item's manager and calls its `__enter__`: (its `__exit__`, the
    /// value entered).
    pub(super) fn enter_manager(&mut self, ce: &Ex) -> R<(Value, Value)> {
        let mgr = self.eval(ce)?;
        let enter = self
            .get_attr(&mgr, "__enter__")
            .map_err(|x| at(x, ce.span))?;
        let exit = self
            .get_attr(&mgr, "__exit__")
            .map_err(|x| at(x, ce.span))?;
        let v = self
            .call_value(&enter, vec![], vec![])
            .map_err(|x| at(x, ce.span))?;
        Ok((exit, v))
    }

    pub fn exec_with(&mut self, items: &[(Ex, Option<Target>)], body: &[St]) -> R<Flow> {
        let Some(((ce, target), rest)) = items.split_first() else {
            return self.exec_block(body);
        };
        let (exit, v) = self.enter_manager(ce)?;
        if let Some(t) = target {
            self.store(t, v)?;
        }
        let r = self.exec_with(rest, body);
        match r {
            Ok(f) => {
                // `__exit__` is a call, which reuses `ret`: keep a pending return value aside
                let pending = (f == Flow::Return).then(|| std::mem::take(&mut self.ret));
                self.call_value(&exit, vec![Value::None, Value::None, Value::None], vec![])
                    .map_err(|x| at(x, ce.span))?;
                if let Some(v) = pending {
                    self.ret = v;
                }
                Ok(f)
            }
            Err(mut e) => {
                if e.error.kind == ErrorKind::LimitExceeded {
                    return Err(e);
                }
                let cls = Value::Class(self.exc_class(&e));
                let val = self.exc_value(&mut e);
                let sup = self
                    .call_value(&exit, vec![cls, val, Value::None], vec![])
                    .map_err(|x| at(x, ce.span))?;
                if self.truthy(&sup)? {
                    Ok(Flow::Normal)
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Turns an exception that escaped to the top into the public `Error`.
    #[allow(clippy::boxed_local)] // `Exc` is the boxed type every caller propagates
    pub fn finish_error(&mut self, e: Exc) -> Error {
        let mut e: ExcInner = *e;
        if let Some(p) = e.pending.take() {
            e.frames.push(TraceFrame {
                func: "<module>".into(),
                span: p,
            });
        }
        let mut error = e.error;
        if let Some(m) = &e.missing {
            self.add_suggestion(&mut error, m);
        }
        if error.span.is_none() {
            error.span = e.frames.first().map(|f| f.span);
        }
        e.frames.reverse();
        error.traceback = e.frames;
        error
    }
}

impl Interp {
    /// `KeyError(key)`: the message is `repr(key)`, `args` holds the key itself.
    pub fn key_error(&mut self, key: &Value) -> Exc {
        let cls = self.b.exc_class(ErrorKind::KeyError);
        let msg = match self.repr(key) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let mut e = err(ErrorKind::KeyError, msg);
        e.value = Some(new_exc_instance(&cls, vec![key.clone()]));
        e
    }
}

/// A new exception object of class `cls` with `args`.
pub fn new_exc_instance(cls: &Rc<Class>, args: Vec<Value>) -> Value {
    let inst = Instance::new(cls.clone());
    inst.put_attr("args", Value::tuple(args));
    let inst = Rc::new(inst);
    super::gc::track_instance(&inst);
    Value::Instance(inst)
}

/// `Exception.__init__(self, *args)`: stores `args`.
pub fn exc_init(_: &mut Interp, args: &[Value], _: &[(Rc<str>, Value)]) -> R<Value> {
    let Some((Value::Instance(me), rest)) = args.split_first() else {
        return Err(type_err("Exception.__init__ needs an instance"));
    };
    me.put_attr("args", Value::tuple(rest.to_vec()));
    Ok(Value::None)
}

/// `str(e)` for an exception object without a user `__str__`.
pub fn exc_str(me: &mut Interp, v: &Value) -> R<String> {
    let Value::Instance(inst) = v else {
        return Ok(String::new());
    };
    let args = inst.attr("args");
    match &args {
        Some(Value::Tuple(t)) if t.is_empty() => Ok(String::new()),
        Some(Value::Tuple(t)) if t.len() == 1 => {
            if inst.class.exc_kind() == Some(ErrorKind::KeyError) {
                me.repr(&t[0])
            } else {
                me.str_of(&t[0])
            }
        }
        Some(a) => me.str_of(a),
        None => Ok(String::new()),
    }
}

/// Whether a class is an exception class (built in or derived).
pub fn is_exc_class(c: &Class) -> bool {
    matches!(c.kind, ClassKind::Exc(_)) || c.exc_kind().is_some()
}
