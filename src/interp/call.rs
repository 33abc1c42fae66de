//! Calls: argument binding, frames on the value stack, recursion and interrupt checks.

use super::tree::{CArg, Ex, ExKind, Place};
use super::value::{
    discard, Class, ClassKind, Function, Instance, NativeCode, NativeImpl, Own, Value,
};
use super::{at, err, type_err, Interp, R};
use crate::compile::capture::trace;
use crate::error::{ErrorKind, TraceFrame};
use crate::interp::capture::guards;
use crate::source::Span;
use std::cell::RefCell;
use std::rc::Rc;

type Kw = Vec<(Rc<str>, Value)>;

/// Positional arguments of a native call, on the native stack up to four.
type PosArgs = smallvec::SmallVec<[Value; 4]>;

/// Whether every argument is a plain positional one (no `*`, `**` or keyword).
fn all_pos(args: &[CArg]) -> bool {
    args.iter().all(|a| matches!(a, CArg::Pos(_)))
}

impl Interp {
    /// Counts one operation; every few hundred (see `limits`) checks the interrupt flag
    /// (KeyboardInterrupt), the operation budget and the deadline (LimitExceeded).
    #[inline]
    pub fn check_interrupt(&mut self) -> R<()> {
        if self.limits.tick() {
            return self.limits_slow();
        }
        Ok(())
    }

    pub fn call_expr(&mut self, f: Value, args: &[CArg], span: Span) -> R<Value> {
        match &f {
            Value::Func(func) if fits_simple(func, 0, args) => {
                return self.call_simple(func.clone(), None, args, span);
            }
            Value::Class(c) if c.kind == ClassKind::User => {
                if let Some(Value::Func(init)) = c.lookup_static("__init__").as_ref() {
                    if fits_simple(init, 1, args) {
                        return self.new_instance_simple(c, init.clone(), args, span);
                    }
                }
            }
            Value::Native(n) if all_pos(args) && !trace::active() => {
                if let NativeCode::Builtin(b) = &n.code {
                    return self.call_builtin_pos(*b, args).map_err(|e| at(e, span));
                }
            }
            _ => {}
        }
        let (pos, kw) = self.eval_args(args)?;
        crate::compile::capture::trace::set_span(span);
        self.call_value(&f, pos, kw).map_err(|e| at(e, span))
    }

    /// Calls the builtin `b` with the plain positional `args` (see `all_pos`), evaluated
    /// in order: one or two in an array on the native stack (no vector to fill and drop).
    fn call_builtin_pos(&mut self, b: NativeImpl, args: &[CArg]) -> R<Value> {
        match args {
            [CArg::Pos(x)] => {
                let a = [self.operand(x)?];
                b(self, &a, &[])
            }
            [CArg::Pos(x), CArg::Pos(y)] => {
                let x = self.operand(x)?;
                let a = [x, self.operand(y)?];
                b(self, &a, &[])
            }
            _ => {
                let pos = self.eval_pos(args)?;
                b(self, &pos, &[])
            }
        }
    }

    /// Plain positional arguments (see `all_pos`), evaluated in order.
    fn eval_pos(&mut self, args: &[CArg]) -> R<PosArgs> {
        let mut pos = PosArgs::new();
        for a in args {
            if let CArg::Pos(x) = a {
                pos.push(self.operand(x)?);
            }
        }
        Ok(pos)
    }

    /// `obj.name(args)` on a str, dict, set or tuple, or a module's native function,
    /// positional arguments only, outside a capture: no argument `Vec`, no bound
    /// method. `None` when it does not apply.
    fn call_native_method(
        &mut self,
        obj: &Value,
        name: &Rc<str>,
        args: &[CArg],
        span: Span,
    ) -> Option<R<Value>> {
        if !all_pos(args) || trace::active() {
            return None;
        }
        use super::builtins::{methods, seqmethods};
        if let Value::Module(m) = obj {
            let f = m.get(name)?;
            let Value::Native(n) = &f else {
                return None;
            };
            let NativeCode::Builtin(b) = &n.code else {
                return None;
            };
            let r = self.call_builtin_pos(*b, args);
            return Some(r.map_err(|e| at(e, span)));
        }
        if !matches!(
            obj,
            Value::Str(_) | Value::Dict(_) | Value::Set(_) | Value::Tuple(_) | Value::Size(_)
        ) {
            return None;
        }
        let pos = match self.eval_pos(args) {
            Ok(pos) => pos,
            Err(e) => return Some(Err(at(e, span))),
        };
        let r = match obj {
            Value::Str(s) => methods::str_method(self, s, name, &pos, &[]),
            Value::Dict(d) => seqmethods::dict_method(self, d, name, &pos, &[]),
            Value::Set(d) => seqmethods::set_method(self, d, name, &pos),
            Value::Tuple(t) => seqmethods::tuple_method(self, t, name, &pos),
            Value::Size(t) => super::builtins::size::method(self, t, name, &pos),
            _ => {
                let r = self.call_builtin_method(obj, name, pos.into_vec(), Vec::new());
                return Some(r.map_err(|e| at(e, span)));
            }
        };
        let r = r.map_err(|e| super::suggest::note_attr(e, obj, name));
        Some(r.map_err(|e| at(e, span)))
    }

    /// The call expression `e` = `f(args)`. A global bound to a Kiln function taking
    /// exactly these positional args runs in this native frame (`call_simple_inline`).
    #[inline(never)]
    pub fn eval_call(&mut self, e: &Ex, f: &Ex, args: &[CArg]) -> R<Value> {
        if let ExKind::Load(Place::Global(i, name)) = &f.kind {
            if let Some(func) = self.global_func(*i) {
                if trace::active() {
                    let (g, v) = (&self.globals, Value::Func(func.clone()));
                    guards::note_load(|| guards::Origin::Global(g.clone(), *i, name.clone()), &v);
                }
                if fits_simple(&func, 0, args) {
                    return self.call_simple_inline(func, None, args, e.span);
                }
                return self.call_expr(Value::Func(func), args, e.span);
            }
        }
        let fv = self.eval(f)?;
        self.call_expr(fv, args, e.span)
    }

    /// Calls `func` with `recv` (if any) and the positional `args`, which the caller
    /// checked with `fits_simple`: the arguments go straight into the new frame's slots.
    #[inline(never)]
    pub fn call_simple(
        &mut self,
        func: Rc<Function>,
        recv: Option<Value>,
        args: &[CArg],
        span: Span,
    ) -> R<Value> {
        self.call_simple_inline(func, recv, args, span)
    }

    /// `call_simple`'s body, inlined into `eval_call`.
    #[inline(always)]
    fn call_simple_inline(
        &mut self,
        func: Rc<Function>,
        recv: Option<Value>,
        args: &[CArg],
        span: Span,
    ) -> R<Value> {
        let base = self.stack.len();
        if let Some(r) = recv {
            self.stack.push(r);
        }
        for a in args {
            if let CArg::Pos(x) = a {
                // `n - 1` on the scalar fast path, without a nested `eval` frame
                if let Some(n) = self.num_arg(x) {
                    self.stack.push(n.value());
                    continue;
                }
                match self.operand(x) {
                    Ok(v) => self.stack.push(v),
                    Err(e) => {
                        self.stack.truncate(base);
                        return Err(e);
                    }
                }
            }
        }
        self.run_frame(func, base).map_err(|e| at(e, span))
    }

    /// `C(args)` for a user class whose `__init__` takes exactly these positional args.
    fn new_instance_simple(
        &mut self,
        c: &Rc<Class>,
        init: Rc<Function>,
        args: &[CArg],
        span: Span,
    ) -> R<Value> {
        let inst = new_instance(c);
        let r = self.call_simple(init, Some(inst.clone()), args, span)?;
        check_init_result(&r).map_err(|e| at(e, span))?;
        Ok(inst)
    }

    /// `obj.name(args)`; `call` is the call expression (its span, and its lookup hint).
    pub fn call_method_expr(
        &mut self,
        obj: Value,
        name: &Rc<str>,
        args: &[CArg],
        call: &Ex,
    ) -> R<Value> {
        let span = call.span;
        if let Value::Instance(inst) = &obj {
            let own = inst.attrs.borrow().load(name, &call.hint);
            let method = match &own {
                Own::Hit(Value::Func(func)) if fits_simple(func, 0, args) => {
                    return self.call_simple(func.clone(), None, args, span);
                }
                Own::Hit(_) | Own::Dict => None,
                Own::Miss => match &call.site().lookup(&inst.class, name) {
                    Some(Value::Func(func)) if fits_simple(func, 1, args) => Some(func.clone()),
                    _ => None,
                },
            };
            // the receiver moves into the frame (no clone)
            if let Some(func) = method {
                return self.call_simple(func, Some(obj), args, span);
            }
        }
        if let (Value::List(l), [CArg::Pos(x)]) = (&obj, args) {
            if &**name == "append" && !crate::compile::capture::trace::active() {
                let v = self.operand(x)?;
                if let Ok(mut items) = l.try_borrow_mut() {
                    return super::containers::push(&mut items, v, "list")
                        .map(|()| Value::None)
                        .map_err(|e| at(e, span));
                }
                return self
                    .call_builtin_method(&obj, name, vec![v], Vec::new())
                    .map_err(|e| at(e, span));
            }
        }
        if let Some(r) = self.call_native_method(&obj, name, args, span) {
            return r;
        }
        let (pos, kw) = self.eval_args(args)?;
        crate::compile::capture::trace::set_span(span);
        match &obj {
            Value::Instance(_) | Value::Class(_) | Value::Module(_) | Value::Super(_) => {
                let f = self.get_attr(&obj, name).map_err(|e| at(e, span))?;
                self.call_value(&f, pos, kw).map_err(|e| at(e, span))
            }
            Value::Compiled(cf) if cf.module.is_some() => {
                let f = self.get_attr(&obj, name).map_err(|e| at(e, span))?;
                self.call_value(&f, pos, kw).map_err(|e| at(e, span))
            }
            _ => self
                .call_builtin_method(&obj, name, pos, kw)
                .map_err(|e| at(e, span)),
        }
    }

    /// Calls any callable value.
    pub fn call_value(&mut self, f: &Value, args: Vec<Value>, kw: Kw) -> R<Value> {
        match f {
            Value::Func(func) => {
                let base = self.stack.len();
                // exactly the positional parameters (a `key=` function, a callback):
                // straight into the frame's slots, no binding pass
                if kw.is_empty() && func.proto.simple && args.len() == func.proto.params.len() {
                    self.stack.extend(args);
                    return self.run_frame(func.clone(), base);
                }
                if let Err(e) = self.bind_args(func, args, kw) {
                    self.stack.truncate(base);
                    return Err(e);
                }
                self.invoke(func.clone(), base)
            }
            Value::Native(n) => match &n.code {
                NativeCode::Builtin(f) => {
                    use super::capture::symint;
                    if symint::any_sym(&args) || kw.iter().any(|(_, v)| symint::has_sym(v)) {
                        if let Some(v) = symint::min_max(&n.name, &args, &kw) {
                            return Ok(v);
                        }
                        if let Some(r) = symint::create(self, &n.name, *f, &args, &kw) {
                            return r;
                        }
                        let args = symint::concrete_all(&args);
                        let kw: Vec<_> = kw
                            .iter()
                            .map(|(k, v)| (k.clone(), symint::concrete(v)))
                            .collect();
                        return f(self, &args, &kw);
                    }
                    f(self, &args, &kw)
                }
                NativeCode::Host(h) => {
                    use crate::compile::capture::trace;
                    if trace::active() {
                        trace::graph_break(trace::BreakReason::HostFunction(n.name.clone()));
                    }
                    call_host(&n.name, h, &args, &kw)
                }
            },
            Value::Compiled(cf) => self.call_compiled(cf, args, kw),
            Value::Graph(g) if kw.is_empty() => {
                let mut printed = String::new();
                let r = g.call(&args, &mut printed);
                if r.is_ok() && !printed.is_empty() {
                    self.write(&printed);
                }
                r.map_err(super::builtins::tensor::te)
            }
            Value::Graph(_) => Err(super::type_err("a Graph takes positional arguments only")),
            Value::BoundMethod(bm) => {
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(bm.0.clone());
                all.extend(args);
                self.call_value(&bm.1, all, kw)
            }
            Value::BuiltinMethod(bm) => self.call_builtin_method(&bm.0, &bm.1, args, kw),
            Value::Class(c) if matches!(c.kind, ClassKind::Builtin(_)) => {
                // `int(T)`, `range(T)`, `str(T)`: built-in types see a symbolic int's
                // value; `tuple(x.shape)` keeps its items as they are (reading them is a
                // use of its own).
                if args
                    .iter()
                    .any(|a| matches!(a, Value::SymInt(_) | Value::SymFloat(_)))
                {
                    let args = args.iter().map(super::capture::symint::concrete).collect();
                    return self.instantiate(c, args, kw);
                }
                self.instantiate(c, args, kw)
            }
            Value::Class(c) => self.instantiate(c, args, kw),
            Value::Instance(inst) => match inst.class.lookup("__call__") {
                Some(m) => {
                    let mut all = Vec::with_capacity(args.len() + 1);
                    all.push(f.clone());
                    all.extend(args);
                    self.call_value(&m, all, kw)
                }
                None => Err(type_err(format!(
                    "'{}' object is not callable",
                    f.type_name()
                ))),
            },
            _ => Err(type_err(format!(
                "'{}' object is not callable",
                f.type_name()
            ))),
        }
    }

    /// Binds arguments into new frame slots pushed at the top of the stack.
    fn bind_args(&mut self, func: &Function, args: Vec<Value>, kw: Kw) -> R<()> {
        let p = &func.proto;
        let base = self.stack.len();
        let np = p.params.len();
        let n_pos = args.len();
        self.stack.resize(base + p.n_slots as usize, Value::Unbound);
        let mut extra = Vec::new();
        for (i, a) in args.into_iter().enumerate() {
            if i < np {
                self.stack[base + i] = a;
            } else {
                extra.push(a);
            }
        }
        match p.vararg {
            Some(s) => self.stack[base + s as usize] = Value::tuple(extra),
            None if !extra.is_empty() => {
                return Err(type_err(format!(
                    "{}() takes {} positional argument{} but {} {} given",
                    p.name,
                    np,
                    if np == 1 { "" } else { "s" },
                    n_pos,
                    if n_pos == 1 { "was" } else { "were" }
                )))
            }
            None => {}
        }
        let mut kwdict = super::value::DictMap::default();
        for (name, v) in kw {
            let slot = p
                .params
                .iter()
                .position(|q| **q == *name)
                .map(|i| i as u32)
                .or_else(|| p.kwonly.iter().find(|(q, _)| **q == *name).map(|(_, s)| *s));
            match slot {
                Some(s) => {
                    let cell = &mut self.stack[base + s as usize];
                    if !matches!(cell, Value::Unbound) {
                        return Err(type_err(format!(
                            "{}() got multiple values for argument '{}'",
                            p.name, name
                        )));
                    }
                    *cell = v;
                }
                None if p.kwarg.is_some() => {
                    kwdict.insert(super::value::Key(Value::Str(name)), v);
                }
                None => {
                    return Err(type_err(format!(
                        "{}() got an unexpected keyword argument '{}'",
                        p.name, name
                    )))
                }
            }
        }
        if let Some(s) = p.kwarg {
            self.stack[base + s as usize] = Value::Dict(Rc::new(RefCell::new(kwdict)));
        }
        let nd = func.defaults.len();
        let mut missing = Vec::new();
        for i in 0..np {
            if matches!(self.stack[base + i], Value::Unbound) {
                if i + nd >= np {
                    self.stack[base + i] = func.defaults[i + nd - np].clone();
                } else {
                    missing.push(format!("'{}'", p.params[i]));
                }
            }
        }
        if !missing.is_empty() {
            return Err(missing_args(&p.name, "positional", &missing));
        }
        for (i, (name, s)) in p.kwonly.iter().enumerate() {
            if matches!(self.stack[base + *s as usize], Value::Unbound) {
                match func.kwdefaults.get(i).cloned().flatten() {
                    Some(d) => self.stack[base + *s as usize] = d,
                    None => missing.push(format!("'{name}'")),
                }
            }
        }
        if !missing.is_empty() {
            return Err(missing_args(&p.name, "keyword-only", &missing));
        }
        Ok(())
    }

    /// Runs a function whose bound parameters start at `base` on the stack.
    pub fn invoke(&mut self, func: Rc<Function>, base: usize) -> R<Value> {
        if func.proto.is_gen {
            return self.new_generator(func, base);
        }
        self.run_frame(func, base)
    }

    /// `invoke`, inlined into `call_simple`: one native frame per simple Kiln call.
    #[inline(always)]
    fn run_frame(&mut self, func: Rc<Function>, base: usize) -> R<Value> {
        let proto = func.proto.clone();
        let top = base + proto.n_slots as usize;
        grow_stack(&mut self.stack, top);
        if proto.has_cells {
            self.init_cells(&func, base);
        }
        if self.depth >= self.max_depth || self.limits.tick() {
            if let Err(e) = self.call_guard() {
                self.stack.truncate(base);
                return Err(e);
            }
        }
        let saved_fp = std::mem::replace(&mut self.fp, base);
        let saved_globals = if Rc::ptr_eq(&self.globals, &func.globals) {
            None
        } else {
            Some(std::mem::replace(&mut self.globals, func.globals.clone()))
        };
        let saved_func = self.cur_func.replace(func);
        self.depth += 1;
        // Checking the native stack costs a few ns; every 8th level is enough with a
        // 1 MiB red zone (one Kiln call uses far less than 128 KiB of native stack).
        let r = if self.depth.is_multiple_of(8) {
            stacker::maybe_grow(1024 * 1024, 4 * 1024 * 1024, || {
                self.run_fn_body(&proto.body)
            })
        } else {
            self.run_fn_body(&proto.body)
        };
        self.depth -= 1;
        self.cur_func = saved_func;
        if let Some(g) = saved_globals {
            self.globals = g;
        }
        self.fp = saved_fp;
        while self.stack.len() > base {
            if let Some(v) = self.stack.pop() {
                discard(v);
            }
        }
        r.map_err(|e| add_frame(e, &proto))
    }

    /// Wraps captured parameters into cells and installs fresh and captured cells.
    #[inline(never)]
    pub(crate) fn init_cells(&mut self, func: &Function, base: usize) {
        let proto = &func.proto;
        for s in &proto.cell_params {
            let i = base + *s as usize;
            let v = std::mem::take(&mut self.stack[i]);
            self.stack[i] = new_cell(v);
        }
        for s in &proto.cell_locals {
            self.stack[base + *s as usize] = new_cell(Value::Unbound);
        }
        for (s, c) in proto.free_slots.iter().zip(func.closure.iter()) {
            self.stack[base + *s as usize] = c.clone();
        }
        if crate::compile::capture::trace::active() {
            note_frozen_loads(func);
        }
    }

    /// The checks at a call that is too deep or due for a limits check (the tick fired).
    #[cold]
    #[inline(never)]
    fn call_guard(&mut self) -> R<()> {
        if self.depth >= self.max_depth {
            return Err(err(
                ErrorKind::RecursionError,
                "maximum recursion depth exceeded",
            ));
        }
        self.limits_slow()
    }

    /// Zero-argument `super()`: the defining class of the running function, and `self`.
    pub fn make_super(&mut self, slot: u32) -> R<Value> {
        let owner = self
            .cur_func
            .as_ref()
            .and_then(|f| f.owner.borrow().as_ref().and_then(|w| w.upgrade()));
        let Some(cls) = owner else {
            return Err(err(
                ErrorKind::RuntimeError,
                "super(): __class__ cell not found",
            ));
        };
        let me = match self.local(slot) {
            Value::Cell(c) => c.borrow().clone(),
            v => v.clone(),
        };
        Ok(Value::Super(Rc::new((cls, me))))
    }

    /// Creates an instance of a class (or converts, for built-in types).
    pub fn instantiate(&mut self, c: &Rc<Class>, args: Vec<Value>, kw: Kw) -> R<Value> {
        if let ClassKind::Builtin(tag) = c.kind {
            return self.construct_builtin(tag, args, kw);
        }
        let inst = new_instance(c);
        match c.lookup_static("__init__").as_ref() {
            Some(Value::Func(init))
                if kw.is_empty()
                    && init.proto.simple
                    && init.proto.params.len() == args.len() + 1 =>
            {
                let base = self.stack.len();
                self.stack.push(inst.clone());
                self.stack.extend(args);
                let r = self.invoke(init.clone(), base)?;
                check_init_result(&r)?;
            }
            Some(init) => {
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(inst.clone());
                all.extend(args);
                let r = self.call_value(init, all, kw)?;
                check_init_result(&r)?;
            }
            None => {
                if !args.is_empty() || !kw.is_empty() {
                    return Err(type_err(format!("{}() takes no arguments", c.name)));
                }
            }
        }
        Ok(inst)
    }
}

/// True when a call with `extra` leading values plus `args` can bind straight into the
/// parameter slots of `func` (plain positional parameters, exact count, no `*`/`**`/kw).
#[inline]
pub fn fits_simple(func: &Function, extra: usize, args: &[CArg]) -> bool {
    func.proto.simple
        && args.len() + extra == func.proto.params.len()
        && args.iter().all(|a| matches!(a, CArg::Pos(_)))
}

/// Extends the value stack with unbound slots up to `top` (building each `Unbound` in
/// place: `Vec::resize` would call the out-of-line `Value::clone` per slot).
#[inline]
fn grow_stack(stack: &mut Vec<Value>, top: usize) {
    while stack.len() < top {
        stack.push(Value::Unbound);
    }
}

/// A fresh, empty instance of a user class (its first attributes are stored inline).
fn new_instance(c: &Rc<Class>) -> Value {
    let inst = Rc::new(Instance::new(c.clone()));
    crate::compile::capture::trace::note_created(Rc::as_ptr(&inst) as usize);
    super::gc::track_instance(&inst);
    Value::Instance(inst)
}

/// While capturing: the values a closure captured as is are external inputs of the
/// capture, as they were when read through a cell; each is noted through a cell of
/// its own holding the value (the closure never rebinds it, so the guard holds).
#[cold]
fn note_frozen_loads(func: &Function) {
    for (v, n) in func.closure.iter().zip(func.proto.frees.iter()) {
        if !matches!(v, Value::Cell(_)) {
            let origin = || {
                let c = Rc::new(super::value::CellObj::new(v.clone()));
                crate::interp::capture::guards::Origin::Cell(c, n.clone())
            };
            crate::interp::capture::guards::note_load(origin, v);
        }
    }
}

/// A fresh closure cell (noted for capture: stores into it are local).
pub fn new_cell(v: Value) -> Value {
    let c = Rc::new(super::value::CellObj::new(v));
    crate::compile::capture::trace::note_created(Rc::as_ptr(&c) as usize);
    super::gc::track_cell(&c);
    Value::Cell(c)
}

fn check_init_result(r: &Value) -> R<()> {
    if matches!(r, Value::None) {
        Ok(())
    } else {
        Err(type_err(format!(
            "__init__() should return None, not '{}'",
            r.type_name()
        )))
    }
}

/// Adds the frame of the function `proto` to a propagating exception's traceback.
#[cold]
#[inline(never)]
pub(crate) fn add_frame(mut e: super::Exc, proto: &super::tree::FuncProto) -> super::Exc {
    let span = e.pending.take().unwrap_or(proto.span);
    e.frames.push(TraceFrame {
        func: proto.name.clone(),
        span,
    });
    e
}

fn missing_args(fname: &str, what: &str, names: &[String]) -> super::Exc {
    let list = match names.len() {
        1 => names[0].clone(),
        n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
    };
    type_err(format!(
        "{}() missing {} required {} argument{}: {}",
        fname,
        names.len(),
        what,
        if names.len() == 1 { "" } else { "s" },
        list
    ))
}

/// Runs a host closure from a script call. Keyword arguments, re-entry and a panic in
/// the closure become exceptions instead of reaching the host.
fn call_host(
    name: &str,
    h: &RefCell<super::value::HostImpl>,
    args: &[Value],
    kw: &[(Rc<str>, Value)],
) -> R<Value> {
    if !kw.is_empty() {
        return Err(type_err(format!("{name}() takes no keyword arguments")));
    }
    let Ok(mut f) = h.try_borrow_mut() else {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("host function {name}() called while it is running"),
        ));
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(args))) {
        Ok(r) => r,
        Err(_) => Err(err(
            ErrorKind::RuntimeError,
            format!("host function {name}() panicked"),
        )),
    }
}
