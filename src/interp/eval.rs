//! Expression evaluation and name loads/stores.

use super::containers;
use super::num::{int_add_sub, num_cmp, num_op, Num};
use super::suggest::{self, Missing};
use super::tree::{CArg, Ex, ExKind, FPart, Gen, Place, Target};
use super::value::{discard, Function, Own, Value};
use super::{at, err, type_err, Interp, R};
use crate::compile::capture::trace;
use crate::error::ErrorKind;
use crate::interp::capture::guards;
use crate::syntax::ast::{BoolOp, CmpOp};
use std::cell::RefCell;
use std::rc::Rc;

/// Keyword arguments of a call, in order.
pub type KwArgs = Vec<(Rc<str>, Value)>;

pub fn name_error(n: &str) -> super::Exc {
    err(ErrorKind::NameError, format!("name '{n}' is not defined"))
}

fn unbound_local(n: &str) -> super::Exc {
    err(
        ErrorKind::NameError,
        format!("cannot access local variable '{n}' where it is not associated with a value"),
    )
}

/// Where a comprehension's results go.
enum CompOut<'a> {
    List(Vec<Value>, &'a Ex),
    Dict(super::value::DictMap, &'a Ex, &'a Ex),
}

impl Interp {
    #[inline]
    pub fn local(&self, slot: u32) -> &Value {
        &self.stack[self.fp + slot as usize]
    }

    /// The Kiln function bound to a global slot, if that is what it holds.
    #[inline]
    pub(crate) fn global_func(&self, slot: u32) -> Option<Rc<Function>> {
        match self.globals.slots.borrow().get(slot as usize) {
            Some(Value::Func(f)) => Some(f.clone()),
            _ => None,
        }
    }

    pub fn load(&mut self, p: &Place) -> R<Value> {
        match p {
            Place::Local(s, n) => match self.local(*s) {
                Value::Unbound => Err(unbound_local(n)),
                v => Ok(v.clone()),
            },
            Place::Cell(s, n) => match self.local(*s) {
                Value::Cell(c) => match &*c.borrow() {
                    Value::Unbound => Err(err(
                        ErrorKind::NameError,
                        format!("cannot access free variable '{n}' where it is not associated with a value in enclosing scope"),
                    )),
                    v => {
                        if trace::active() {
                            guards::note_load(|| guards::Origin::Cell(c.clone(), n.clone()), v);
                        }
                        Ok(v.clone())
                    }
                },
                _ => Err(unbound_local(n)),
            },
            Place::Global(i, n) => {
                if let Some(v) = self.globals.slots.borrow().get(*i as usize) {
                    if !matches!(v, Value::Unbound) {
                        if trace::active() {
                            let g = &self.globals;
                            let origin = || guards::Origin::Global(g.clone(), *i, n.clone());
                            return Ok(guards::load(origin, v.clone()));
                        }
                        return Ok(v.clone());
                    }
                }
                self.b.names.get(n).cloned().ok_or_else(|| {
                    let missing = Missing::Name(self.globals.clone(), n.clone());
                    suggest::note(name_error(n), missing)
                })
            }
            Place::ClassNs(n, fallback) => {
                if let Some(ns) = self.class_ns.last() {
                    if let Some(v) = ns.borrow().get(n) {
                        return Ok(v.clone());
                    }
                }
                self.load(fallback)
            }
        }
    }

    /// The builtin `n` (a global name no module slot binds), through the position its
    /// load site remembers in `hint`.
    #[inline(never)]
    fn builtin(&self, n: &super::tree::Name, hint: &super::value::AttrHint) -> R<Value> {
        let names = &self.b.names;
        if let Some((k, v)) = hint.position().and_then(|p| names.get_index(p)) {
            if super::attrs::same_name(k, n) {
                return Ok(v.clone());
            }
        }
        match names.get_full(&**n) {
            Some((pos, _, v)) => {
                hint.set_position(pos);
                Ok(v.clone())
            }
            None => {
                let missing = Missing::Name(self.globals.clone(), n.clone());
                Err(suggest::note(name_error(n), missing))
            }
        }
    }

    pub fn store_place(&mut self, p: &Place, v: Value) -> R<()> {
        match p {
            Place::Local(s, _) => {
                let i = self.fp + *s as usize;
                Value::set_slot(&mut self.stack[i], v);
            }
            Place::Cell(s, _) => {
                if let Value::Cell(c) = self.local(*s) {
                    if trace::note_mutation(Rc::as_ptr(c) as usize, "nonlocal store") {
                        return Err(err(
                            ErrorKind::RuntimeError,
                            "nonlocal store in the branch not taken",
                        ));
                    }
                    *c.borrow_mut() = v;
                }
            }
            Place::Global(i, _) => {
                if trace::active() {
                    trace::graph_break(trace::BreakReason::Mutation("global store"));
                }
                if trace::in_speculation() {
                    return Err(err(
                        ErrorKind::RuntimeError,
                        "global store in the branch not taken",
                    ));
                }
                if let Some(slot) = self.globals.slots.borrow_mut().get_mut(*i as usize) {
                    *slot = v;
                }
            }
            Place::ClassNs(n, _) => match self.class_ns.last() {
                Some(ns) => {
                    ns.borrow_mut().insert(n.clone(), v);
                }
                None => return Err(err(ErrorKind::RuntimeError, "no class namespace")),
            },
        }
        Ok(())
    }

    pub fn store(&mut self, t: &Target, v: Value) -> R<()> {
        match t {
            Target::Place(p) => self.store_place(p, v),
            Target::Attr(obj, name, hint) => {
                let o = self.operand(obj)?;
                self.store_attr(&o, name, v, hint)
                    .map_err(|e| at(e, obj.span))
            }
            Target::Subscript(obj, idx) => {
                let v = match self.store_local_item(obj, idx, v) {
                    Ok(r) => return r.map_err(|e| at(e, obj.span.to(idx.span))),
                    Err(v) => v,
                };
                let o = self.operand(obj)?;
                if let ExKind::Slice(a, b, c) = &idx.kind {
                    let parts = self.slice_parts(a, b, c)?;
                    return self
                        .set_slice(&o, parts, v)
                        .map_err(|e| at(e, obj.span.to(idx.span)));
                }
                let i = self.operand(idx)?;
                self.set_item(&o, &i, v)
                    .map_err(|e| at(e, obj.span.to(idx.span)))
            }
            Target::Unpack(ts, star, span) => self.unpack(ts, *star, v).map_err(|e| at(e, *span)),
        }
    }

    fn unpack(&mut self, ts: &[Target], star: Option<usize>, v: Value) -> R<()> {
        // a tuple of the right size (`for k, v in d.items()`): its items go to the
        // targets as they are, no `Vec` (a store cannot change a tuple's items)
        if let (Value::Tuple(items) | Value::Size(items), None) = (&v, star) {
            if items.len() == ts.len() {
                for (t, x) in ts.iter().zip(items.iter()) {
                    // a local target: straight into its slot (no `store` dispatch)
                    if let Target::Place(Place::Local(s, _)) = t {
                        let i = self.fp + *s as usize;
                        Value::set_slot(&mut self.stack[i], x.clone());
                        continue;
                    }
                    self.store(t, x.clone())?;
                }
                return Ok(());
            }
        }
        let items = self.collect(&v)?;
        match star {
            None => {
                if items.len() != ts.len() {
                    return Err(value_unpack(ts.len(), items.len()));
                }
                for (t, x) in ts.iter().zip(items) {
                    self.store(t, x)?;
                }
            }
            Some(si) => {
                let after = ts.len() - si - 1;
                if items.len() < ts.len() - 1 {
                    return Err(super::value_err(format!(
                        "not enough values to unpack (expected at least {}, got {})",
                        ts.len() - 1,
                        items.len()
                    )));
                }
                let mid_end = items.len() - after;
                for (i, t) in ts.iter().enumerate() {
                    if i < si {
                        self.store(t, items[i].clone())?;
                    } else if i == si {
                        self.store(t, Value::list(items[si..mid_end].to_vec()))?;
                    } else {
                        self.store(t, items[mid_end + (i - si - 1)].clone())?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The bounds of a slice `a:b:c` (`None` where left out), evaluated in order.
    fn slice_parts(
        &mut self,
        a: &Option<Box<Ex>>,
        b: &Option<Box<Ex>>,
        c: &Option<Box<Ex>>,
    ) -> R<[Value; 3]> {
        let mut parts = [Value::None, Value::None, Value::None];
        for (slot, x) in parts.iter_mut().zip([a, b, c]) {
            if let Some(x) = x {
                *slot = self.operand(x)?;
            }
        }
        Ok(parts)
    }

    /// Evaluates leaves (constants, locals) inline, everything else through `eval`.
    #[inline(always)]
    pub fn operand(&mut self, e: &Ex) -> R<Value> {
        match &e.kind {
            ExKind::Const(v) => Ok(v.fast_clone()),
            ExKind::Load(Place::Local(s, n)) => match self.local(*s) {
                Value::Unbound => Err(at(unbound_local(n), e.span)),
                v => Ok(v.fast_clone()),
            },
            // `f(n - 1) + f(n - 2)`: no `eval` frame between the operator and the call
            ExKind::Call(f, args) => self.eval_call(e, f, args),
            _ => self.eval(e),
        }
    }

    pub fn eval(&mut self, e: &Ex) -> R<Value> {
        match &e.kind {
            ExKind::Const(v) => Ok(v.fast_clone()),
            ExKind::Load(Place::Local(s, n)) => match self.local(*s) {
                Value::Unbound => Err(at(unbound_local(n), e.span)),
                v => Ok(v.fast_clone()),
            },
            ExKind::Load(p @ Place::Cell(s, _)) => {
                if let Value::Cell(c) = self.local(*s) {
                    if let Ok(v) = c.try_borrow() {
                        if !matches!(*v, Value::Unbound) {
                            return Ok(v.fast_clone());
                        }
                    }
                }
                self.load(p).map_err(|x| at(x, e.span))
            }
            ExKind::Load(Place::Global(i, n)) if !trace::active() => {
                if let Some(v) = self.globals.slots.borrow().get(*i as usize) {
                    if !matches!(v, Value::Unbound) {
                        return Ok(v.fast_clone());
                    }
                }
                self.builtin(n, &e.hint).map_err(|x| at(x, e.span))
            }
            ExKind::Load(p) => self.load(p).map_err(|x| at(x, e.span)),
            ExKind::Binary(op, a, b) => {
                if let Some(n) = self.num_binop(*op, a, b) {
                    return Ok(n.value());
                }
                let x = self.operand(a)?;
                let y = self.operand(b)?;
                // two ints (`fib(n - 1) + fib(n - 2)`): added inline
                if let (&Value::Int(p), &Value::Int(q)) = (&x, &y) {
                    if let Some(n) = int_add_sub(*op, p, q) {
                        if trace::active() {
                            trace::set_span(e.span);
                        }
                        // two ints: nothing to drop (skips the out-of-line drop glue)
                        std::mem::forget(x);
                        std::mem::forget(y);
                        return Ok(n.value());
                    }
                }
                // two numbers: no generic dispatch
                if let (Some(p), Some(q)) = (Num::of(&x), Num::of(&y)) {
                    if let Some(n) = num_op(*op, p, q) {
                        if trace::active() {
                            trace::set_span(e.span);
                        }
                        discard(x);
                        discard(y);
                        return Ok(n.value());
                    }
                }
                trace::set_span(e.span);
                let r = self.binop(*op, &x, &y).map_err(|x| at(x, e.span));
                discard(x);
                discard(y);
                r
            }
            ExKind::Compare(a, rest) if rest.len() == 1 => {
                let (op, b) = &rest[0];
                if let Some(r) = self.num_compare(a, *op, b) {
                    return Ok(Value::Bool(r));
                }
                let x = self.operand(a)?;
                let y = self.operand(b)?;
                match (&x, &y) {
                    (Value::Tensor(_), _) | (_, Value::Tensor(_)) => {
                        self.compare_value(*op, &x, &y).map_err(|x| at(x, e.span))
                    }
                    _ => match self.compare(*op, &x, &y) {
                        Ok(r) => Ok(Value::Bool(r)),
                        Err(x) => Err(at(x, e.span)),
                    },
                }
            }
            ExKind::Call(f, args) => self.eval_call(e, f, args),
            ExKind::CallMethod(recv, name, args) => {
                let obj = self.operand(recv)?;
                self.call_method_expr(obj, name, args, e)
            }
            ExKind::Attr(obj, name) => {
                // `local.name` of an instance: read through the slot, no receiver clone
                if let ExKind::Load(Place::Local(s, _)) = &obj.kind {
                    if let (Value::Instance(inst), false) = (self.local(*s), trace::active()) {
                        if let Own::Hit(v) = inst.attrs.borrow().load(name, &e.hint) {
                            return Ok(v);
                        }
                    }
                }
                let o = self.operand(obj)?;
                // (while capturing, `get_attr` notes where a loaded tensor came from)
                if let (Value::Instance(inst), false) = (&o, trace::active()) {
                    let own = inst.attrs.borrow().load(name, &e.hint);
                    match own {
                        Own::Hit(v) => return Ok(v),
                        Own::Miss => {}
                        Own::Dict => return self.get_attr(&o, name).map_err(|x| at(x, e.span)),
                    }
                    // not its own: the class chain, through this site's inline cache
                    if let Some(v) = e.site().lookup(&inst.class, name) {
                        return self
                            .class_attr_of(&o, &inst.class, v, name)
                            .map_err(|x| at(x, e.span));
                    }
                }
                self.get_attr(&o, name).map_err(|x| at(x, e.span))
            }
            ExKind::Subscript(obj, idx) => {
                if let Some(v) = self.local_item(obj, idx) {
                    return Ok(v);
                }
                let o = self.operand(obj)?;
                // `xs[a:b]` outside a capture: no slice object
                if let (ExKind::Slice(a, b, c), false) = (&idx.kind, trace::active()) {
                    let parts = self.slice_parts(a, b, c)?;
                    return self.get_slice(&o, parts).map_err(|x| at(x, e.span));
                }
                let mut i = self.operand(idx)?;
                trace::set_span(e.span);
                if trace::active() && !matches!(o, Value::Tensor(_)) {
                    i = super::capture::capture_for::python_index(i);
                }
                self.get_item(&o, &i).map_err(|x| at(x, e.span))
            }
            ExKind::Unary(op, x) => {
                let v = self.operand(x)?;
                self.unary(*op, &v).map_err(|x| at(x, e.span))
            }
            ExKind::BoolOp(op, a, b) => {
                let x = self.eval(a)?;
                let t = self.truthy(&x).map_err(|x| at(x, e.span))?;
                match (op, t) {
                    (BoolOp::And, false) | (BoolOp::Or, true) => Ok(x),
                    _ => self.eval(b),
                }
            }
            ExKind::IfExp(c, t, f) => {
                let cv = self.eval(c)?;
                if self.truthy(&cv).map_err(|x| at(x, e.span))? {
                    self.eval(t)
                } else {
                    self.eval(f)
                }
            }
            _ => self.eval_cold(e),
        }
    }

    /// A single comparison `a op b` of two ints or two floats, on the fast path.
    #[inline(always)]
    pub(crate) fn num_compare(&self, a: &Ex, op: CmpOp, b: &Ex) -> Option<bool> {
        if let Some((x, c)) = self.local_int_const(a, b) {
            return num_cmp(op, Num::I(x), Num::I(c));
        }
        num_cmp(op, self.num(a)?, self.num(b)?)
    }

    /// A condition that is one comparison of two numbers on the fast path (`n < 2`).
    #[inline(always)]
    pub(crate) fn num_cond(&self, c: &Ex) -> Option<bool> {
        match &c.kind {
            ExKind::Compare(a, rest) => match rest.as_slice() {
                [(op, b)] => self.num_compare(a, *op, b),
                _ => None,
            },
            _ => None,
        }
    }

    /// `cond`, except that a tensor value while a capture records is returned as is
    /// (`Err(t)`), for the statement to capture a branch or loop on it.
    #[inline(always)]
    pub fn cond_or_traced(&mut self, c: &Ex) -> R<Result<bool, crate::tensor::Tensor>> {
        if !trace::active() {
            return self.truth(c, c.span).map(Ok);
        }
        if let Some(r) = self.num_cond(c) {
            return Ok(Ok(r));
        }
        let cv = self.eval(c)?;
        if let Value::Tensor(t) = &cv {
            return Ok(Err(t.clone()));
        }
        self.truthy(&cv).map(Ok).map_err(|x| at(x, c.span))
    }

    /// The truth value of a condition (`if`, `while`): see `truth`.
    pub fn cond(&mut self, c: &Ex) -> R<bool> {
        if !trace::active() {
            return self.truth(c, c.span);
        }
        if let Some(r) = self.num_cond(c) {
            return Ok(r);
        }
        let cv = self.eval(c)?;
        self.truthy(&cv).map_err(|x| at(x, c.span))
    }

    /// The less frequent expression kinds, kept out of `eval` to keep its frame small.
    #[inline(never)]
    fn eval_cold(&mut self, e: &Ex) -> R<Value> {
        match &e.kind {
            ExKind::Compare(a, rest) => {
                let mut x = self.eval(a)?;
                let last = rest.len().saturating_sub(1);
                for (i, (op, b)) in rest.iter().enumerate() {
                    let y = self.eval(b)?;
                    let r = self.compare_value(*op, &x, &y).map_err(|x| at(x, e.span))?;
                    if i == last || !self.truthy(&r).map_err(|x| at(x, e.span))? {
                        return Ok(r);
                    }
                    x = y;
                }
                Ok(Value::Bool(true))
            }
            ExKind::Slice(a, b, c) => Ok(Value::Slice(Rc::new(self.slice_parts(a, b, c)?))),
            ExKind::List(xs) => Ok(Value::list(self.eval_items(xs)?)),
            ExKind::Tuple(xs) => self.eval_tuple(xs),
            ExKind::Starred(_) => Err(at(
                err(ErrorKind::SyntaxError, "can't use starred expression here"),
                e.span,
            )),
            ExKind::Dict(kv) => {
                let mut m = super::value::DictMap::default();
                for (k, v) in kv {
                    let kv = self.eval(k)?;
                    let vv = self.eval(v)?;
                    m.insert(self.key_in_map(kv, &m).map_err(|x| at(x, k.span))?, vv);
                }
                Ok(new_dict(m))
            }
            ExKind::DictUnpack(kv) => {
                let mut m = super::value::DictMap::default();
                for (k, v) in kv {
                    let Some(k) = k else {
                        let vv = self.eval(v)?;
                        self.dict_splat(&mut m, vv).map_err(|x| at(x, v.span))?;
                        continue;
                    };
                    let kv = self.eval(k)?;
                    let vv = self.eval(v)?;
                    m.insert(self.key_in_map(kv, &m).map_err(|x| at(x, k.span))?, vv);
                }
                Ok(new_dict(m))
            }
            ExKind::Named(p, x) => {
                let v = self.eval(x)?;
                self.store_place(p, v.clone()).map_err(|x| at(x, e.span))?;
                Ok(v)
            }
            ExKind::Set(xs) => {
                let mut m = super::value::DictMap::default();
                for x in self.eval_items(xs)? {
                    let k = self.key_in_map(x, &m).map_err(|x| at(x, e.span))?;
                    m.insert(k, Value::None);
                }
                Ok(Value::set(m))
            }
            ExKind::GenExp(proto, it) => {
                let func = self.make_func(proto)?;
                let src = self.eval(it)?;
                let iter = self.get_iter(&src).map_err(|x| at(x, it.span))?;
                let Value::Func(f) = &func else {
                    return Ok(Value::None);
                };
                let f = f.clone();
                let base = self.stack.len();
                self.stack.push(iter);
                self.new_generator(f, base)
            }
            ExKind::FString(parts) if crate::compile::capture::trace::active() => {
                self.fstring_traced(parts)
            }
            ExKind::FString(parts) => Ok(Value::str(&self.fstring(parts)?)),
            ExKind::MakeFunc(proto) => self.make_func(proto),
            ExKind::Super(slot) => self.make_super(*slot).map_err(|x| at(x, e.span)),
            ExKind::ListComp(elt, gens, cells) => {
                self.fresh_cells(cells);
                let mut out = CompOut::List(Vec::new(), elt);
                self.comp(gens, &mut out)?;
                match out {
                    CompOut::List(v, _) => Ok(Value::list(v)),
                    CompOut::Dict(..) => Ok(Value::None),
                }
            }
            ExKind::DictComp(k, v, gens, cells) => {
                self.fresh_cells(cells);
                let mut out = CompOut::Dict(Default::default(), k, v);
                self.comp(gens, &mut out)?;
                match out {
                    CompOut::Dict(m, ..) => Ok(new_dict(m)),
                    CompOut::List(..) => Ok(Value::None),
                }
            }
            _ => Err(at(
                err(
                    ErrorKind::RuntimeError,
                    "internal error: unhandled expression",
                ),
                e.span,
            )),
        }
    }

    fn eval_items(&mut self, xs: &[Ex]) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(xs.len());
        for x in xs {
            if let ExKind::Starred(inner) = &x.kind {
                let v = self.eval(inner)?;
                out.extend(self.collect(&v).map_err(|e| at(e, x.span))?);
            } else {
                out.push(self.operand(x)?);
            }
        }
        Ok(out)
    }

    /// A tuple display. Without a starred item its values go straight into the tuple's
    /// allocation (an exact-length iterator: one allocation, where a `Vec` made two);
    /// after an error nothing more is evaluated.
    fn eval_tuple(&mut self, xs: &[Ex]) -> R<Value> {
        if xs.iter().any(|x| matches!(x.kind, ExKind::Starred(_))) {
            return Ok(Value::tuple(self.eval_items(xs)?));
        }
        let mut failed = None;
        let items: Rc<[Value]> = xs
            .iter()
            .map(|x| {
                if failed.is_some() {
                    return Value::None;
                }
                self.operand(x).unwrap_or_else(|e| {
                    failed = Some(e);
                    Value::None
                })
            })
            .collect();
        match failed {
            Some(e) => Err(e),
            None => Ok(Value::Tuple(items)),
        }
    }

    /// `**m` in a dict display: `m`'s items, through `keys()` and `[]` for a non-dict.
    fn dict_splat(&mut self, m: &mut super::value::DictMap, v: Value) -> R<()> {
        if let Value::Dict(d) = &v {
            let other = d.borrow().clone();
            return self.merge_maps(m, other, "dict");
        }
        let keys = match self.get_attr(&v, "keys") {
            Ok(f) => self.call_value(&f, vec![], vec![])?,
            Err(_) => {
                return Err(type_err(format!(
                    "'{}' object is not a mapping",
                    v.type_name()
                )))
            }
        };
        for k in self.collect(&keys)? {
            let x = self.get_item(&v, &k)?;
            let k = self.key_in_map(k, m)?;
            m.insert(k, x);
        }
        Ok(())
    }

    fn fresh_cells(&mut self, cells: &[u32]) {
        for s in cells {
            let i = self.fp + *s as usize;
            self.stack[i] = super::call::new_cell(Value::Unbound);
        }
    }

    fn comp(&mut self, gens: &[Gen], out: &mut CompOut) -> R<()> {
        let Some((g, rest)) = gens.split_first() else {
            return self.comp_emit(out);
        };
        let it = self.eval(&g.iter)?;
        self.for_each(&it, |me, v| {
            me.store(&g.target, v)?;
            for c in &g.ifs {
                let cv = me.eval(c)?;
                if !me.truthy(&cv).map_err(|x| at(x, c.span))? {
                    return Ok(true);
                }
            }
            me.comp(rest, out)?;
            Ok(true)
        })
        .map_err(|x| at(x, g.iter.span))?;
        Ok(())
    }

    fn comp_emit(&mut self, out: &mut CompOut) -> R<()> {
        match out {
            CompOut::List(v, elt) => {
                let x = self.operand(elt)?;
                containers::push(v, x, "list")?;
            }
            CompOut::Dict(m, k, v) => {
                let kv = self.operand(k)?;
                let vv = self.operand(v)?;
                let key = self.key_in_map(kv, m).map_err(|x| at(x, k.span))?;
                containers::map_insert(m, key, vv, "dict")?;
            }
        }
        Ok(())
    }

    pub(crate) fn fstring(&mut self, parts: &[FPart]) -> R<String> {
        let mut s = String::new();
        for p in parts {
            match p {
                FPart::Lit(t) => s.push_str(t),
                FPart::Expr { expr, conv, spec } => {
                    let v = self.eval(expr)?;
                    let v = match conv {
                        Some('r') | Some('a') => {
                            Value::str(&self.repr(&v).map_err(|x| at(x, expr.span))?)
                        }
                        Some(_) => Value::str(&self.str_of(&v).map_err(|x| at(x, expr.span))?),
                        None => v,
                    };
                    let spec = self.fstring(spec)?;
                    let t = self.format_spec(&v, &spec).map_err(|x| at(x, expr.span))?;
                    s.push_str(&t);
                }
            }
        }
        Ok(s)
    }

    fn make_func(&mut self, proto: &Rc<super::tree::FuncProto>) -> R<Value> {
        let mut defaults = Vec::with_capacity(proto.defaults.len());
        for d in &proto.defaults {
            defaults.push(self.eval(d)?);
        }
        let mut kwdefaults = Vec::with_capacity(proto.kwdefaults.len());
        for d in &proto.kwdefaults {
            kwdefaults.push(match d {
                Some(d) => Some(self.eval(d)?),
                None => None,
            });
        }
        // cells, and the values of variables captured as is (never rebound)
        let mut closure = Vec::with_capacity(proto.capture_from.len());
        for s in &proto.capture_from {
            closure.push(self.local(*s).clone());
        }
        let f = Rc::new(Function {
            proto: proto.clone(),
            defaults,
            kwdefaults,
            closure,
            globals: self.globals.clone(),
            owner: RefCell::new(None),
            attrs: Default::default(),
            gc: Default::default(),
        });
        Ok(Value::Func(f))
    }

    /// Evaluates call arguments into positional values and keyword pairs.
    pub fn eval_args(&mut self, args: &[CArg]) -> R<(Vec<Value>, KwArgs)> {
        let mut pos = Vec::with_capacity(args.len());
        let mut kw = Vec::new();
        for a in args {
            match a {
                CArg::Pos(x) => pos.push(self.operand(x)?),
                CArg::Star(x) => {
                    let v = self.eval(x)?;
                    pos.extend(self.collect(&v).map_err(|e| at(e, x.span))?);
                }
                CArg::Kw(n, x) => kw.push((n.clone(), self.eval(x)?)),
                CArg::StarStar(x) => {
                    let v = self.eval(x)?;
                    let Value::Dict(d) = &v else {
                        return Err(at(
                            type_err(format!(
                                "argument after ** must be a mapping, not {}",
                                v.type_name()
                            )),
                            x.span,
                        ));
                    };
                    for (k, val) in d.borrow().iter() {
                        match &k.0 {
                            Value::Str(s) => kw.push((s.clone(), val.clone())),
                            _ => return Err(at(type_err("keywords must be strings"), x.span)),
                        }
                    }
                }
            }
        }
        Ok((pos, kw))
    }
}

fn value_unpack(expected: usize, got: usize) -> super::Exc {
    if got > expected {
        super::value_err(format!("too many values to unpack (expected {expected})"))
    } else {
        super::value_err(format!(
            "not enough values to unpack (expected {expected}, got {got})"
        ))
    }
}

/// A fresh dict (noted for capture: mutating it is local).
fn new_dict(m: super::value::DictMap) -> Value {
    let d = Value::dict(m);
    trace::note_created(d.ptr_id());
    d
}
