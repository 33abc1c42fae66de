//! Symbolic ints in the interpreter (`compile::capture::symint`): a size of a symbolic dim read
//! during a capture is a `Value::SymInt`. Affine arithmetic keeps it symbolic, view and
//! reshape requests and tensor slices take it as it is; every other use (a comparison,
//! truthiness, a dict key, printing, any other builtin) is a Python-level decision that
//! sees its value and guards the version on the fact it used.

use crate::compile::capture::symint::{self, Cmp, Lin, SymInt};
use crate::interp::ops::int_op;
use crate::interp::value::Value;
use crate::interp::{Interp, R};
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use crate::tensor::Tensor;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `v` for a Python-level use: a symbolic int becomes its (guarded) value, other values
/// are unchanged.
pub fn concrete(v: &Value) -> Value {
    match v {
        Value::SymInt(s) => Value::Int(s.concrete()),
        Value::SymFloat(s) => Value::Float(s.concrete()),
        Value::Tuple(t) if t.iter().any(has_sym) => Value::tuple(t.iter().map(concrete).collect()),
        Value::Size(t) if t.iter().any(has_sym) => Value::Size(t.iter().map(concrete).collect()),
        Value::Slice(s) if s.iter().any(has_sym) => {
            Value::Slice(Rc::new([concrete(&s[0]), concrete(&s[1]), concrete(&s[2])]))
        }
        _ => v.clone(),
    }
}

/// Set (for good) once this process made a symbolic int or float: before that no tuple
/// can hold one, and `has_sym` need not look inside tuples. (A `Value` never crosses
/// threads, so a relaxed flag set before the value exists is enough.)
static SYM_MADE: AtomicBool = AtomicBool::new(false);

/// Notes that a symbolic value exists from now on (see `SYM_MADE`).
#[inline]
pub fn note_made() {
    SYM_MADE.store(true, Ordering::Relaxed);
}

/// True when `v` is a symbolic int or a tuple/slice holding one (looked for down to
/// `SYM_DEPTH` levels, so a deeply nested tuple costs no deep native recursion; sizes
/// are never nested that deep). Inlined: the eager interpreter asks this of every item
/// store and dict key, and most values are neither (a tuple is looked into only once
/// some symbolic value was made).
#[inline]
pub fn has_sym(v: &Value) -> bool {
    match v {
        Value::SymInt(_) | Value::SymFloat(_) => true,
        Value::Tuple(_) | Value::Size(_) | Value::Slice(_) => {
            SYM_MADE.load(Ordering::Relaxed) && has_sym_at(v, 0)
        }
        _ => false,
    }
}

/// How deep `has_sym` looks into nested tuples.
const SYM_DEPTH: usize = 16;

fn has_sym_at(v: &Value, depth: usize) -> bool {
    match v {
        Value::SymInt(_) | Value::SymFloat(_) => true,
        _ if depth >= SYM_DEPTH => false,
        Value::Tuple(t) | Value::Size(t) => t.iter().any(|x| has_sym_at(x, depth + 1)),
        Value::Slice(s) => s.iter().any(|x| has_sym_at(x, depth + 1)),
        _ => false,
    }
}

/// True when `vs` holds a symbolic int (at the top level or in a tuple/slice).
pub fn any_sym(vs: &[Value]) -> bool {
    vs.iter().any(has_sym)
}

/// `vs` with every symbolic int replaced by its value.
pub fn concrete_all(vs: &[Value]) -> Vec<Value> {
    vs.iter().map(concrete).collect()
}

/// The int operand of `v`: an int, a bool or a symbolic int.
fn operand(v: &Value) -> Option<(i64, Option<&SymInt>)> {
    match v {
        Value::Int(i) => Some((*i, None)),
        Value::Bool(b) => Some((*b as i64, None)),
        Value::SymInt(s) => Some((s.value, Some(&**s))),
        _ => None,
    }
}

fn sym_value(s: SymInt) -> Value {
    note_made();
    Value::SymInt(Rc::new(s))
}

impl Interp {
    /// `a op b` when one side is a symbolic int.
    pub(crate) fn sym_binop(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        if let (Some(x), Some(y)) = (operand(a), operand(b)) {
            let lin = match op {
                BinOp::Add => Some(Lin::Add),
                BinOp::Sub => Some(Lin::Sub),
                BinOp::Mul => Some(Lin::Mul),
                BinOp::FloorDiv => Some(Lin::FloorDiv),
                BinOp::Mod if symint::mod_is_const(x, y) => return int_op(op, x.0, y.0),
                _ => None,
            };
            if let Some(lin) = lin {
                if let Value::Int(v) = int_op(op, x.0, y.0)? {
                    if let Some(s) = symint::linear(lin, x, y, v) {
                        return Ok(sym_value(s));
                    }
                }
            }
        }
        if let Some(r) = self.symint_as_float(op, a, b) {
            return r;
        }
        self.binop(op, &concrete(a), &concrete(b))
    }

    /// A unary operator on a symbolic int.
    pub(crate) fn sym_unary(&mut self, op: UnaryOp, s: &Rc<SymInt>) -> R<Value> {
        if let UnaryOp::Neg | UnaryOp::Pos = op {
            let k = if op == UnaryOp::Neg { -1 } else { 1 };
            if let Some(v) = s.value.checked_mul(k) {
                if let Some(r) = symint::linear(Lin::Mul, (s.value, Some(s)), (k, None), v) {
                    return Ok(sym_value(r));
                }
            }
        }
        self.unary(op, &Value::Int(s.concrete()))
    }

    /// A comparison with a symbolic int on one side: decided on the values, guarded by
    /// the relation (or, for `==`, the value) that decided it.
    pub(crate) fn sym_compare(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<bool> {
        let (Some(x), Some(y)) = (operand(a), operand(b)) else {
            return self.compare(op, &concrete(a), &concrete(b));
        };
        let (cmp, outcome) = match op {
            CmpOp::Eq => (Cmp::Eq, x.0 == y.0),
            CmpOp::NotEq => (Cmp::Ne, x.0 != y.0),
            CmpOp::Lt => (Cmp::Lt, x.0 < y.0),
            CmpOp::LtE => (Cmp::Le, x.0 <= y.0),
            CmpOp::Gt => (Cmp::Gt, x.0 > y.0),
            CmpOp::GtE => (Cmp::Ge, x.0 >= y.0),
            _ => return self.compare(op, &concrete(a), &concrete(b)),
        };
        symint::compare(cmp, x, y, outcome);
        Ok(outcome)
    }
}

/// Truthiness of a symbolic int: guarded by `s >= 1` (or its value when it is not
/// positive).
pub fn truthy(s: &SymInt) -> bool {
    if s.value > 0 {
        symint::compare(Cmp::Ge, (s.value, Some(s)), (1, None), true);
        true
    } else {
        s.concrete() != 0
    }
}

/// Size `d` of `t` as Python sees it: a symbolic int for a symbolic dim during a
/// capture, else an int (a read the capture notes).
pub fn size_value(t: &Tensor, d: usize) -> Value {
    if let Some(s) = symint::size(t, d) {
        return sym_value(s);
    }
    crate::compile::capture::trace::note_size_read(t, Some(d));
    Value::Int(t.shape().get(d).map_or(0, |&n| n as i64))
}

/// `t.numel()` as Python sees it: a symbolic int when the product of the sizes stays
/// affine (one symbolic dim: the `numel()` of an `[n, 3, 4, 4]` batch is `48 * n`),
/// else an int (a read of every size, which the capture notes).
pub fn numel_value(t: &Tensor) -> Value {
    let sizes: Vec<Option<SymInt>> = (0..t.ndim()).map(|d| symint::size(t, d)).collect();
    let mut syms = sizes.iter().flatten();
    if let (Some(s), None) = (syms.next(), syms.next()) {
        let rest = t
            .shape()
            .iter()
            .zip(&sizes)
            .filter(|(_, s)| s.is_none())
            .try_fold(1i64, |acc, (&n, _)| acc.checked_mul(i64::try_from(n).ok()?));
        let value = i64::try_from(t.numel()).ok();
        if let (Some(k), Some(v)) = (rest, value) {
            if let Some(r) = symint::linear(Lin::Mul, (s.value, Some(s)), (k, None), v) {
                return sym_value(r);
            }
        }
    }
    crate::compile::capture::trace::note_size_read(t, None);
    Value::Int(t.numel() as i64)
}

/// `t.shape` as a `torch.Size` (symbolic ints for symbolic dims during a capture).
pub fn shape_value(t: &Tensor) -> Value {
    Value::Size((0..t.ndim()).map(|d| size_value(t, d)).collect())
}

/// The symbolic ints of a shape request given as varargs or one tuple/list, in the
/// order of the request's entries (None: a plain entry).
pub fn request_syms(args: &[Value]) -> Vec<Option<Rc<SymInt>>> {
    let one = |v: &Value| match v {
        Value::SymInt(s) => Some(s.clone()),
        _ => None,
    };
    match args {
        [Value::Tuple(t) | Value::Size(t)] => t.iter().map(one).collect(),
        [Value::List(l)] => l.borrow().iter().map(one).collect(),
        _ => args.iter().map(one).collect(),
    }
}

/// `args` with symbolic ints replaced by their values without a guard (the caller
/// records them symbolically), including the items of one tuple/list argument.
pub fn values_unguarded(args: &[Value]) -> Vec<Value> {
    let one = |v: &Value| match v {
        Value::SymInt(s) => Value::Int(s.value),
        _ => v.clone(),
    };
    match args {
        [Value::Tuple(t) | Value::Size(t)] => vec![Value::tuple(t.iter().map(one).collect())],
        [Value::List(l)] => {
            let items: Vec<Value> = l.borrow().iter().map(one).collect();
            vec![Value::tuple(items)]
        }
        _ => args.iter().map(one).collect(),
    }
}

/// `t.view(...)`, `t.reshape(...)`, `t.expand(...)` with symbolic ints among the sizes:
/// run on their values, the request recorded symbolically (None: not such a call).
pub fn shape_method(
    t: &Tensor,
    name: &str,
    args: &[Value],
    kw: super::super::builtins::tensor::Kw,
) -> Option<R<Value>> {
    if name == "narrow" && kw.is_empty() {
        return narrow(t, args);
    }
    if !matches!(name, "view" | "reshape" | "expand") || !kw.is_empty() {
        return None;
    }
    let syms = request_syms(args);
    if syms.iter().all(Option::is_none) {
        return None;
    }
    let plain = values_unguarded(args);
    let out = super::super::builtins::tensor_methods::tensor_method(t, name, &plain, kw);
    match &out {
        Ok(Value::Tensor(o)) => {
            let req: Vec<Option<&SymInt>> = syms.iter().map(|s| s.as_deref()).collect();
            // an expand carries its symbolic sizes in its node (a broadcast size-1 dim
            // takes the requested size at each call); a view/reshape is re-derived
            if name != "expand" || !symint::note_expand_if(o, &req) {
                symint::note_request(o, &req);
            }
        }
        _ => {
            for s in syms.iter().flatten() {
                s.concrete();
            }
        }
    }
    Some(out)
}

impl Interp {
    /// `obj[idx]` when the index holds a symbolic int (None: it does not). A tensor
    /// slice takes a symbolic stop as it is; every other use sees the value.
    pub(crate) fn sym_get_item(&mut self, obj: &Value, idx: &Value) -> Option<R<Value>> {
        if !has_sym(idx) {
            return None;
        }
        if let Value::Tensor(t) = obj {
            return Some(tensor_get(t, idx));
        }
        Some(self.get_item(obj, &concrete(idx)))
    }
}

/// `t[idx]` with symbolic ints in the index: the stop of a unit-step slice stays
/// symbolic (`compile::symint::note_slices`), any other symbolic int is a value.
fn tensor_get(t: &Tensor, idx: &Value) -> R<Value> {
    let items: Vec<Value> = match idx {
        Value::Tuple(items) => items.to_vec(),
        v => vec![v.clone()],
    };
    let mut stops: Vec<(usize, Rc<SymInt>)> = Vec::new();
    // The dim an item indexes (None after an item of unknown extent: `...`, a tensor).
    let mut dim = Some(0usize);
    let plain: Vec<Value> = items
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let d = dim;
            dim = match v {
                Value::None => dim,
                Value::Int(_) | Value::SymInt(_) | Value::Slice(_) => dim.map(|d| d + 1),
                _ => None,
            };
            (k, v, d)
        })
        .map(|(k, v, d)| match v {
            Value::SymInt(i) => match d.and_then(|d| symint::from_end(t, d, i)) {
                Some(c) => Value::Int(c),
                None => concrete(v),
            },
            Value::Slice(s) => {
                let stop = match (&s[1], &s[2]) {
                    (Value::SymInt(x), Value::None) => {
                        stops.push((k, x.clone()));
                        Value::Int(x.value)
                    }
                    (other, _) => concrete(other),
                };
                Value::Slice(Rc::new([concrete(&s[0]), stop, concrete(&s[2])]))
            }
            other => concrete(other),
        })
        .collect();
    let idx = match idx {
        Value::Tuple(_) => Value::tuple(plain),
        _ => plain.into_iter().next().unwrap_or(Value::None),
    };
    let out = crate::interp::builtins::tensor_index::get(t, &idx);
    match &out {
        Ok(Value::Tensor(o)) if !stops.is_empty() => {
            let s: Vec<(usize, &SymInt)> = stops.iter().map(|(k, x)| (*k, &**x)).collect();
            symint::note_slices(o, &s);
        }
        _ => {
            for (_, s) in &stops {
                s.concrete();
            }
        }
    }
    out
}

/// `t.narrow(dim, start, T)` with a symbolic length `T` (and plain `dim`, `start >= 0`
/// within the dim): the slice `[start:start + T]` of that dim, whose stop stays
/// symbolic; None otherwise (the values are used, and eager's checks apply).
fn narrow(t: &Tensor, args: &[Value]) -> Option<R<Value>> {
    let [Value::Int(dim), Value::Int(start), Value::SymInt(len)] = args else {
        return None;
    };
    let nd = i64::try_from(t.ndim()).ok()?;
    let d = usize::try_from(if *dim < 0 { dim + nd } else { *dim }).ok()?;
    let size = i64::try_from(*t.shape().get(d)?).ok()?;
    if *start < 0 || len.value < 0 || start + len.value > size {
        return None;
    }
    let stop = match *start {
        0 => Value::SymInt(len.clone()),
        s => sym_value(symint::linear(
            Lin::Add,
            (len.value, Some(len)),
            (s, None),
            len.value + s,
        )?),
    };
    let mut items = vec![Value::Slice(Rc::new([Value::None, Value::None, Value::None])); d];
    items.push(Value::Slice(Rc::new([
        Value::Int(*start),
        stop,
        Value::None,
    ])));
    Some(tensor_get(t, &Value::tuple(items)))
}

/// `zeros/ones/full(sizes, ...)` with symbolic ints among the sizes (only `dtype=` as a
/// keyword): a one-element tensor of the fill expanded to the sizes (the expand keeps
/// their expressions) and made contiguous. None: not such a call.
pub fn create(
    interp: &mut Interp,
    name: &str,
    f: crate::interp::value::NativeImpl,
    args: &[Value],
    kw: super::super::builtins::tensor::Kw,
) -> Option<R<Value>> {
    if name == "arange" {
        return arange(args, kw);
    }
    let (sizes, rest) = match name {
        "zeros" | "ones" => (args, &[][..]),
        "full" => args.split_at_checked(1)?,
        _ => return None,
    };
    if kw.iter().any(|(k, v)| &**k != "dtype" || has_sym(v)) {
        return None;
    }
    let syms = request_syms(sizes);
    if syms.iter().all(Option::is_none) {
        return None;
    }
    let req = match values_unguarded(sizes).as_slice() {
        [Value::Tuple(t) | Value::Size(t)] => t.to_vec(),
        other => other.to_vec(),
    };
    let req: Vec<i64> = req
        .iter()
        .map(|v| match v {
            Value::Int(i) if *i >= 0 => Some(*i),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let mut one_args = vec![Value::tuple(vec![Value::Int(1); req.len()])];
    one_args.extend(concrete_all(rest));
    let one = match f(interp, &one_args, kw) {
        Ok(v) => match &v {
            Value::Tensor(t) => t.clone(),
            _ => return None,
        },
        Err(e) => return Some(Err(e)),
    };
    let te = super::super::builtins::tensor::te;
    let wide = match one.expand(&req) {
        Ok(w) => w,
        Err(e) => return Some(Err(te(e))),
    };
    let s: Vec<Option<&SymInt>> = syms.iter().map(|s| s.as_deref()).collect();
    symint::note_expand(&wide, &s);
    Some(wide.contiguous().map(Value::Tensor).map_err(te))
}

/// `arange(n)` / `arange(0, n)` of a symbolic int `n` (no keywords): a one-element
/// int64 one expanded to `n` (the expand keeps its expression), summed cumulatively,
/// minus one, so the graph re-sizes it per call. None: not such a call.
fn arange(args: &[Value], kw: super::super::builtins::tensor::Kw) -> Option<R<Value>> {
    let n = match args {
        [Value::SymInt(n)] | [Value::Int(0), Value::SymInt(n)] => n,
        _ => return None,
    };
    if n.value < 0 || !kw.is_empty() {
        return None;
    }
    let te = super::super::builtins::tensor::te;
    let one = crate::tensor::creation::ones(&[1], crate::tensor::dtype::DType::I64);
    let wide = match one.and_then(|o| o.expand(&[n.value])) {
        Ok(w) => w,
        Err(e) => return Some(Err(te(e))),
    };
    symint::note_expand(&wide, &[Some(&**n)]);
    let out = wide.cumsum(0).and_then(|c| {
        crate::ops::binary_scalar(
            crate::optable::BinaryOp::Sub,
            &c,
            crate::tensor::dtype::Scalar::Int(1),
            false,
        )
    });
    Some(out.map(Value::Tensor).map_err(te))
}

/// `min(a, b)` / `max(a, b)` of ints with a symbolic one: the chosen operand as it is
/// (a symbolic int stays symbolic), guarded by the relation that chose it. None: not
/// such a call.
pub fn min_max(
    name: &str,
    args: &[Value],
    kw: super::super::builtins::tensor::Kw,
) -> Option<Value> {
    let is_min = match name {
        "min" => true,
        "max" => false,
        _ => return None,
    };
    let ([a, b], true) = (args, kw.is_empty()) else {
        return None;
    };
    let (x, y) = (operand(a)?, operand(b)?);
    let first = if is_min {
        let o = x.0 <= y.0;
        symint::compare(Cmp::Le, x, y, o);
        o
    } else {
        let o = x.0 >= y.0;
        symint::compare(Cmp::Ge, x, y, o);
        o
    };
    Some(if first { a.clone() } else { b.clone() })
}
