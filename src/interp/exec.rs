//! Statement execution: assignment, control flow, definitions, `del`, module chunks.

use super::num::{num_op, Num};
use super::tree::{Code, Ex, ExKind, Place, St, StKind, Target};
use super::value::{ModuleObj, Own, Value};
use super::{at, err, Flow, Interp, R};
use crate::error::ErrorKind;
use crate::source::Span;
use crate::syntax::ast::BinOp;
use std::rc::Rc;

/// The most names `a, b = x, y` assigns without building the tuple.
const PARALLEL_MAX: usize = 4;

impl Interp {
    /// `a, b = x, y` (as many names as values, no starred item): the values evaluated
    /// in order, then stored left to right, as the tuple's unpacking would.
    fn assign_parallel(&mut self, lhs: &[Target], xs: &[Ex], span: Span) -> R<()> {
        let mut vals: [Value; PARALLEL_MAX] = Default::default();
        for (slot, x) in vals.iter_mut().zip(xs) {
            *slot = self.eval(x)?;
        }
        for (t, v) in lhs.iter().zip(vals.iter_mut()) {
            self.store(t, std::mem::take(v)).map_err(|e| at(e, span))?;
        }
        Ok(())
    }

    pub fn exec_block(&mut self, body: &[St]) -> R<Flow> {
        for s in body {
            match self.exec(s)? {
                Flow::Normal => {}
                f => return Ok(f),
            }
        }
        Ok(Flow::Normal)
    }

    pub fn exec(&mut self, s: &St) -> R<Flow> {
        self.exec_inner(s).map_err(|e| at(e, s.span))
    }

    fn exec_inner(&mut self, s: &St) -> R<Flow> {
        match &s.kind {
            StKind::Expr(e) => {
                self.operand(e)?;
            }
            StKind::AssignLocal(slot, e) => {
                let v = self.operand(e)?;
                let i = self.fp + *slot as usize;
                Value::set_slot(&mut self.stack[i], v);
            }
            StKind::Assign(ts, e) => {
                if let ([Target::Unpack(lhs, None, span)], ExKind::Tuple(xs)) =
                    (ts.as_slice(), &e.kind)
                {
                    let starred = xs.iter().any(|x| matches!(x.kind, ExKind::Starred(_)));
                    if lhs.len() == xs.len() && xs.len() <= PARALLEL_MAX && !starred {
                        self.assign_parallel(lhs, xs, *span)?;
                        return Ok(Flow::Normal);
                    }
                }
                let v = self.operand(e)?;
                if let [t] = ts.as_slice() {
                    self.store(t, v)?;
                } else {
                    for t in ts {
                        self.store(t, v.clone())?;
                    }
                }
            }
            StKind::AugLocal(slot, name, op, e) => {
                let i = self.fp + *slot as usize;
                if let (Some(x), Some(y)) = (Num::of(&self.stack[i]), self.num_rhs(e)) {
                    if let Some(n) = num_op(*op, x, y) {
                        Value::set_slot(&mut self.stack[i], n.value());
                        return Ok(Flow::Normal);
                    }
                }
                let rhs = self.operand(e)?;
                let new = match (&self.stack[i], &rhs) {
                    (Value::Float(a), Value::Float(b)) if matches!(op, BinOp::Add) => Value::Float(a + b),
                    (Value::Int(a), Value::Int(b)) if matches!(op, BinOp::Add) => match a.checked_add(*b) {
                        Some(r) => Value::Int(r),
                        None => super::ops::int_op(*op, *a, *b).map_err(|x| at(x, s.span))?,
                    },
                    (Value::Unbound, _) => {
                        return Err(err(
                            ErrorKind::NameError,
                            format!("cannot access local variable '{name}' where it is not associated with a value"),
                        ))
                    }
                    (cur, _) => {
                        let cur = cur.clone();
                        self.inplace(*op, cur, &rhs)?
                    }
                };
                Value::set_slot(&mut self.stack[i], new);
            }
            StKind::AugAssign(t, op, e) => self.aug_assign(t, *op, e)?,
            StKind::If(c, body, orelse) => {
                let branch = match self.cond_or_traced(c)? {
                    Ok(true) => body,
                    Ok(false) => orelse,
                    Err(t) => return self.exec_if_traced(&t, c.span, body, orelse, s.span),
                };
                match branch.as_slice() {
                    [] => {}
                    // `if c: return x`: no nested block loop
                    [one] => return self.exec(one),
                    _ => return self.exec_block(branch),
                }
            }
            StKind::While(..) | StKind::For(..) => return self.exec_loop(s),
            StKind::Break => return Ok(Flow::Break),
            StKind::Continue => return Ok(Flow::Continue),
            StKind::Pass => {}
            StKind::Return(e) => {
                let v = match e {
                    Some(e) => self.operand(e)?,
                    None => Value::None,
                };
                Value::set_slot(&mut self.ret, v);
                return Ok(Flow::Return);
            }
            _ => return self.exec_cold(s),
        }
        Ok(Flow::Normal)
    }

    /// `while` and `for`, kept out of `exec_inner` so its frame stays small.
    #[inline(never)]
    fn exec_loop(&mut self, s: &St) -> R<Flow> {
        match &s.kind {
            StKind::While(c, body, orelse) if crate::compile::capture::trace::active() => {
                return self.exec_while_traced(c, body, orelse, s.span)
            }
            StKind::While(c, body, orelse) => loop {
                self.check_interrupt()?;
                if !self.cond(c)? {
                    return self.exec_block(orelse);
                }
                match self.exec_block(body)? {
                    Flow::Break => break,
                    Flow::Return => return Ok(Flow::Return),
                    Flow::Normal | Flow::Continue => {}
                }
            },
            StKind::For(..) if crate::compile::capture::trace::active() => {
                return self.exec_for_traced(s)
            }
            StKind::For(t, it, body, orelse) => {
                let itv = self.eval(it)?;
                return self.for_plain(t, &itv, it.span, body, orelse);
            }
            _ => {}
        }
        Ok(Flow::Normal)
    }

    /// `for t in itv: body else: orelse` as eager runs it.
    pub(crate) fn for_plain(
        &mut self,
        t: &Target,
        itv: &Value,
        it_span: crate::source::Span,
        body: &[St],
        orelse: &[St],
    ) -> R<Flow> {
        // The return value, kept aside while the iteration finishes.
        let mut ret = None;
        let local = match t {
            Target::Place(Place::Local(s, _)) => Some(*s as usize),
            _ => None,
        };
        if let (Value::Range(r), Some(s)) = (itv, local) {
            return self
                .for_range_local(r, s, body, orelse)
                .map_err(|x| at(x, it_span));
        }
        // `for_each` counts one operation per item (`check_interrupt`).
        let done = self.for_each(itv, |me, v| {
            match local {
                Some(s) => {
                    let i = me.fp + s;
                    Value::set_slot(&mut me.stack[i], v);
                }
                None => me.store(t, v)?,
            }
            match me.exec_block(body)? {
                Flow::Break => Ok(false),
                Flow::Return => {
                    ret = Some(std::mem::take(&mut me.ret));
                    Ok(false)
                }
                Flow::Normal | Flow::Continue => Ok(true),
            }
        });
        let done = done.map_err(|x| at(x, it_span))?;
        if let Some(v) = ret {
            self.ret = v;
            return Ok(Flow::Return);
        }
        if done {
            return self.exec_block(orelse);
        }
        Ok(Flow::Normal)
    }

    /// `for i in range(..)` into a local: `for_each`'s range loop without the closure.
    fn for_range_local(
        &mut self,
        r: &super::value::RangeObj,
        slot: usize,
        body: &[St],
        orelse: &[St],
    ) -> R<Flow> {
        let (mut i, stop, step) = (r.start, r.stop, r.step);
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            self.check_interrupt()?;
            let at = self.fp + slot;
            Value::set_slot(&mut self.stack[at], Value::Int(i));
            match self.exec_block(body)? {
                Flow::Break => return Ok(Flow::Normal),
                Flow::Return => return Ok(Flow::Return),
                Flow::Normal | Flow::Continue => {}
            }
            i = match i.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
        self.exec_block(orelse)
    }

    /// The less frequent statements, kept out of `exec_inner` to keep its frame small.
    #[inline(never)]
    fn exec_cold(&mut self, s: &St) -> R<Flow> {
        match &s.kind {
            StKind::FuncDef(decos, mk, store) => {
                let mut decs = Vec::with_capacity(decos.len());
                for d in decos {
                    decs.push(self.eval(d)?);
                }
                let mut f = self.eval(mk)?;
                for (d, ex) in decs.iter().zip(decos.iter()).rev() {
                    f = self
                        .call_value(d, vec![f], Vec::new())
                        .map_err(|x| at(x, ex.span))?;
                }
                self.store(store, f)?;
            }
            StKind::ClassDef(c) => self.exec_class(c)?,
            StKind::Import(items) => {
                for (path, target, aliased) in items {
                    let m = self.import(path)?;
                    let bind = if *aliased || path.len() == 1 {
                        Value::Module(m)
                    } else {
                        Value::Module(self.import(&path[..1])?)
                    };
                    self.store(target, bind)?;
                }
            }
            StKind::ImportFrom(path, names) => {
                let m = self.import(path)?;
                for (n, target) in names {
                    let v = match m.get(n) {
                        Some(v) => Some(v),
                        None => self.import_submodule(path, n)?,
                    };
                    let v = v.ok_or_else(|| {
                        let e = err(
                            ErrorKind::ImportError,
                            format!("cannot import name '{}' from '{}'", n, m.name),
                        );
                        let missing = super::suggest::Missing::Import(m.clone(), n.clone());
                        super::suggest::note(e, missing)
                    })?;
                    self.store(target, v)?;
                }
            }
            StKind::ImportStar(path) => {
                let m = self.import(path)?;
                for (n, v) in self.public_names(&m)? {
                    self.globals.set(&n, v);
                }
            }
            StKind::Assert(test, msg) => {
                let v = self.eval(test)?;
                if !self.truthy(&v)? {
                    let m = match msg {
                        Some(m) => {
                            let mv = self.eval(m)?;
                            self.str_of(&mv)?
                        }
                        None => String::new(),
                    };
                    return Err(at(err(ErrorKind::AssertionError, m), test.span));
                }
            }
            StKind::Raise(e, cause) => return Err(self.raise(e.as_ref(), cause.as_ref())?),
            StKind::Try(t) => return self.exec_try(t),
            StKind::With(items, body) => return self.exec_with(items, body),
            StKind::Del(ts) => {
                for t in ts {
                    self.delete(t)?;
                }
                self.close_dropped_generators();
            }
            StKind::Yield(..) => {
                return Err(err(ErrorKind::SyntaxError, "'yield' outside function"));
            }
            _ => {
                return Err(err(
                    ErrorKind::RuntimeError,
                    "internal error: unhandled statement",
                ))
            }
        }
        Ok(Flow::Normal)
    }

    /// `a op= b`: in place for lists (`+=`) and `__iadd__`-style dunders, else binary op.
    pub fn inplace(&mut self, op: BinOp, cur: Value, rhs: &Value) -> R<Value> {
        // two numbers: no dispatch (`None`, e.g. an overflow, goes the general way)
        if let (Some(p), Some(q)) = (Num::of(&cur), Num::of(rhs)) {
            if let Some(n) = num_op(op, p, q) {
                return Ok(n.value());
            }
        }
        if let (BinOp::Add, Value::List(l)) = (op, &cur) {
            let items = self.collect(rhs)?;
            l.borrow_mut().extend(items);
            return Ok(cur);
        }
        if let Value::Tensor(t) = &cur {
            if super::builtins::tensor_ops::tensor_inplace(op, t, rhs)? {
                return Ok(cur);
            }
        }
        if let Some(r) = self.set_inplace(op, &cur, rhs) {
            r?;
            return Ok(cur);
        }
        if let Value::Instance(_) = cur {
            let iname = super::ops::inplace_dunder(op);
            if let Some(r) = self.try_dunder(&cur, iname, std::slice::from_ref(rhs))? {
                return Ok(r);
            }
        }
        self.binop(op, &cur, rhs)
    }

    fn aug_assign(&mut self, t: &Target, op: BinOp, e: &super::tree::Ex) -> R<()> {
        self.aug_assign_with(t, op, |me| me.eval(e))
    }

    /// `t op= rhs`, the right-hand side computed by `rhs` after `t` is loaded.
    pub(crate) fn aug_assign_with(
        &mut self,
        t: &Target,
        op: BinOp,
        rhs: impl FnOnce(&mut Interp) -> R<Value>,
    ) -> R<()> {
        match t {
            Target::Place(p) => {
                let cur = self.load(p)?;
                let rhs = rhs(self)?;
                let new = self.inplace(op, cur, &rhs)?;
                self.store_place(p, new)
            }
            Target::Attr(obj, name, hint) => {
                let o = self.eval(obj)?;
                let own = match &o {
                    Value::Instance(inst) if !crate::compile::capture::trace::active() => {
                        inst.attrs.borrow().load(name, hint)
                    }
                    _ => Own::Miss,
                };
                let cur = match own {
                    Own::Hit(v) => v,
                    _ => self.get_attr(&o, name).map_err(|x| at(x, obj.span))?,
                };
                let rhs = rhs(self)?;
                let new = self.inplace(op, cur, &rhs)?;
                self.store_attr(&o, name, new, hint)
            }
            Target::Subscript(obj, idx) => {
                let o = self.eval(obj)?;
                let i = self.eval(idx)?;
                if let Some(x) = super::index::list_num(&o, &i) {
                    // `xs[k] op= number`: no item clone, no generic store
                    let rhs = rhs(self)?;
                    if let Some(n) = Num::of(&rhs).and_then(|y| num_op(op, x, y)) {
                        if super::index::set_list_num(&o, &i, n) {
                            return Ok(());
                        }
                    }
                    let new = self.inplace(op, x.value(), &rhs)?;
                    return self.set_item(&o, &i, new);
                }
                let cur = self
                    .get_item(&o, &i)
                    .map_err(|x| at(x, obj.span.to(idx.span)))?;
                let rhs = rhs(self)?;
                let new = self.inplace(op, cur, &rhs)?;
                self.set_item(&o, &i, new)
            }
            Target::Unpack(..) => Err(err(
                ErrorKind::SyntaxError,
                "illegal expression for augmented assignment",
            )),
        }
    }

    fn delete(&mut self, t: &Target) -> R<()> {
        match t {
            Target::Place(p) => {
                self.load(p)?;
                match p {
                    Place::ClassNs(n, _) => {
                        if let Some(ns) = self.class_ns.last() {
                            ns.borrow_mut().shift_remove(n);
                        }
                        Ok(())
                    }
                    _ => self.store_place(p, Value::Unbound),
                }
            }
            Target::Attr(obj, name, _) => {
                let o = self.eval(obj)?;
                self.del_attr(&o, name).map_err(|x| at(x, obj.span))
            }
            Target::Subscript(obj, idx) => {
                let o = self.eval(obj)?;
                let i = self.eval(idx)?;
                self.del_item(&o, &i)
                    .map_err(|x| at(x, obj.span.to(idx.span)))
            }
            Target::Unpack(ts, _, _) => {
                for t in ts {
                    self.delete(t)?;
                }
                Ok(())
            }
        }
    }

    /// Runs a resolved module chunk in `module`; returns the value of a final expression.
    pub fn run_code(&mut self, code: &Code, module: Rc<ModuleObj>) -> R<Value> {
        let base = self.stack.len();
        self.stack
            .resize(base + code.n_slots as usize, Value::Unbound);
        let saved_fp = std::mem::replace(&mut self.fp, base);
        let saved_globals = std::mem::replace(&mut self.globals, module);
        let saved_func = self.cur_func.take();
        let r = self.run_body(&code.body);
        self.cur_func = saved_func;
        self.globals = saved_globals;
        self.fp = saved_fp;
        self.stack.truncate(base);
        r
    }

    fn run_body(&mut self, body: &[St]) -> R<Value> {
        let n = body.len();
        for (i, s) in body.iter().enumerate() {
            if i + 1 == n {
                if let StKind::Expr(e) = &s.kind {
                    return self.eval(e).map_err(|x| at(x, s.span));
                }
            }
            let f = self.exec(s)?;
            self.close_dropped_generators();
            match f {
                Flow::Normal => {}
                Flow::Return => {
                    return Err(at(
                        err(ErrorKind::SyntaxError, "'return' outside function"),
                        s.span,
                    ))
                }
                Flow::Break | Flow::Continue => {
                    return Err(at(
                        err(ErrorKind::SyntaxError, "'break' or 'continue' outside loop"),
                        s.span,
                    ))
                }
            }
        }
        Ok(Value::None)
    }
}
