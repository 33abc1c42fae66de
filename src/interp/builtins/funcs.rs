//! Builtin functions: print, len, min/max, sorted, isinstance, getattr, iter/next, ...

use super::convert::int_arg;
use super::{arity, kwarg, native, no_kw};
use crate::error::ErrorKind;
use crate::interp::repr::fmt_err;
use crate::interp::value::{Class, IterObj, Value};
use crate::interp::{err, type_err, value_err, Interp, R};
use crate::pyfmt::{int_from_float, py_round};
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// The builtins `abs min max sum round any all` dispatch to the tensor method of the
/// same name when their first argument is a tensor (as `torch.max` etc.).
fn on_tensor(name: &str, args: &[Value], kw: Kw) -> Option<R<Value>> {
    super::tensor_funcs::builtin_on_tensor(name, args, kw)
}

pub fn register(names: &mut super::Names) {
    let table: &[(&str, crate::interp::value::NativeImpl)] = &[
        ("print", print),
        ("len", len),
        ("abs", abs),
        ("min", min),
        ("max", max),
        ("sum", sum),
        ("round", round),
        ("sorted", sorted),
        ("reversed", reversed),
        ("enumerate", enumerate),
        ("zip", zip),
        ("map", map),
        ("filter", filter),
        ("any", any),
        ("all", all),
        ("isinstance", isinstance),
        ("issubclass", issubclass),
        ("hasattr", hasattr),
        ("getattr", getattr),
        ("setattr", setattr),
        ("delattr", delattr),
        ("repr", repr),
        ("next", next),
        ("hash", hash),
        ("id", id),
        ("callable", callable),
        ("divmod", divmod),
        ("chr", chr),
        ("ord", ord),
        ("format", format),
        ("super", super_),
    ];
    for (n, f) in table {
        names.insert((*n).into(), native(n, *f));
    }
}

fn print(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let traced = crate::compile::capture::trace::active();
    if traced && kwarg(kw, "file").is_some_and(|f| !matches!(f, Value::None)) {
        crate::compile::capture::trace::graph_break(
            crate::compile::capture::trace::BreakReason::Print,
        );
    }
    no_kw("print", kw, &["sep", "end", "flush", "file"])?;
    let sep = match kwarg(kw, "sep") {
        Some(Value::Str(s)) => s.to_string(),
        Some(Value::None) | None => " ".into(),
        Some(v) => {
            return Err(type_err(format!(
                "sep must be None or a string, not {}",
                v.type_name()
            )))
        }
    };
    let end = match kwarg(kw, "end") {
        Some(Value::Str(s)) => s.to_string(),
        Some(Value::None) | None => "\n".into(),
        Some(v) => {
            return Err(type_err(format!(
                "end must be None or a string, not {}",
                v.type_name()
            )))
        }
    };
    if traced && crate::compile::capture::trace::active() {
        return me.print_traced(args, &sep, &end);
    }
    let mut pieces = Vec::with_capacity(2 * args.len() + 1);
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            pieces.push(sep.clone());
        }
        pieces.push(me.str_of(a)?);
    }
    pieces.push(end);
    match kwarg(kw, "file") {
        Some(Value::None) | None => me.write(&pieces.concat()),
        Some(f) => {
            // a script's object gets CPython's calls: one write per piece (argument,
            // separator, end); a file object takes them joined, to the same effect
            let pieces = match f {
                Value::Instance(_) => pieces,
                _ => vec![pieces.concat()],
            };
            for p in pieces {
                me.call_builtin_method(f, "write", vec![Value::str(&p)], vec![])?;
            }
            if let Some(fl) = kwarg(kw, "flush") {
                if me.truthy(fl)? {
                    me.call_builtin_method(f, "flush", vec![], vec![])?;
                }
            }
        }
    }
    Ok(Value::None)
}

/// `len(v)`.
pub fn length(me: &mut Interp, v: &Value) -> R<i64> {
    Ok(match v {
        Value::Str(s) => crate::interp::strindex::char_len(s) as i64,
        Value::List(l) => l.borrow().len() as i64,
        Value::Tuple(t) | Value::Size(t) => t.len() as i64,
        Value::Dict(d) | Value::Set(d) | Value::FrozenSet(d) => d.borrow().len() as i64,
        Value::Range(r) => r.len(),
        Value::Tensor(t) => super::tensor_ops::tensor_len(t)?,
        Value::Instance(_) => match me.call_dunder(v, "__len__", &[])? {
            Some(Value::Int(n)) if n >= 0 => n,
            Some(Value::Int(_)) => return Err(value_err("__len__() should return >= 0")),
            Some(r) => {
                return Err(type_err(format!(
                    "'{}' object cannot be interpreted as an integer",
                    r.type_name()
                )))
            }
            None => {
                return Err(type_err(format!(
                    "object of type '{}' has no len()",
                    v.type_name()
                )))
            }
        },
        _ => {
            return Err(type_err(format!(
                "object of type '{}' has no len()",
                v.type_name()
            )))
        }
    })
}

fn len(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("len", args, 1, 1)?;
    if let Value::Tensor(t) = &args[0] {
        if t.ndim() > 0 && crate::compile::capture::trace::active() {
            return Ok(crate::interp::capture::symint::size_value(t, 0));
        }
    }
    Ok(Value::Int(length(me, &args[0])?))
}

fn abs(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    if let Some(r) = on_tensor("abs", args, kw) {
        return r;
    }
    arity("abs", args, 1, 1)?;
    Ok(match &args[0] {
        Value::Int(i) => Value::Int(
            i.checked_abs()
                .ok_or_else(|| err(ErrorKind::OverflowError, "integer overflow"))?,
        ),
        Value::Bool(b) => Value::Int(*b as i64),
        Value::Float(f) => Value::Float(f.abs()),
        v => match me.call_dunder(v, "__abs__", &[])? {
            Some(r) => r,
            None => {
                return Err(type_err(format!(
                    "bad operand type for abs(): '{}'",
                    v.type_name()
                )))
            }
        },
    })
}

fn min_max(me: &mut Interp, args: &[Value], kw: Kw, name: &str, want_max: bool) -> R<Value> {
    if let Some(r) = on_tensor(name, args, kw) {
        return me.named_result(name, r?);
    }
    no_kw(name, kw, &["key", "default"])?;
    let items = match args.len() {
        0 => {
            return Err(type_err(format!(
                "{name} expected at least 1 argument, got 0"
            )))
        }
        1 => me.collect(&args[0])?,
        _ => args.to_vec(),
    };
    let key = kwarg(kw, "key")
        .filter(|k| !matches!(k, Value::None))
        .cloned();
    let mut best: Option<(Value, Value)> = None;
    for x in items {
        let k = match &key {
            Some(f) => me.call_value(f, vec![x.clone()], vec![])?,
            None => x.clone(),
        };
        best = match best {
            None => Some((x, k)),
            Some((bx, bk)) => {
                let better = if want_max {
                    me.lt(&bk, &k)?
                } else {
                    me.lt(&k, &bk)?
                };
                if better {
                    Some((x, k))
                } else {
                    Some((bx, bk))
                }
            }
        };
    }
    match best {
        Some((x, _)) => Ok(x),
        None => match kwarg(kw, "default") {
            Some(d) => Ok(d.clone()),
            None => Err(value_err(format!("{name}() arg is an empty sequence"))),
        },
    }
}

fn min(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    min_max(me, args, kw, "min", false)
}

fn max(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    min_max(me, args, kw, "max", true)
}

fn sum(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    if let Some(r) = on_tensor("sum", args, kw) {
        return r;
    }
    no_kw("sum", kw, &["start"])?;
    arity("sum", args, 1, 2)?;
    let mut acc = args
        .get(1)
        .or_else(|| kwarg(kw, "start"))
        .cloned()
        .unwrap_or(Value::Int(0));
    if let Value::Str(_) = acc {
        return Err(type_err(
            "sum() can't sum strings [use ''.join(seq) instead]",
        ));
    }
    // streamed, as Python: `sum(range(n))` builds no list
    me.for_each(&args[0], |me, x| {
        acc = me.binop(crate::syntax::ast::BinOp::Add, &acc, &x)?;
        Ok(true)
    })?;
    Ok(acc)
}

fn round(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    if let Some(r) = on_tensor("round", args, kw) {
        return r;
    }
    no_kw("round", kw, &["ndigits"])?;
    arity("round", args, 1, 2)?;
    let nd = match args.get(1).or_else(|| kwarg(kw, "ndigits")) {
        None | Some(Value::None) => None,
        Some(v) => Some(int_arg(v, "")?),
    };
    match (&args[0], nd) {
        (Value::Int(i), None) => Ok(Value::Int(*i)),
        (Value::Bool(b), None) => Ok(Value::Int(*b as i64)),
        (Value::Int(i), Some(n)) => {
            if n >= 0 {
                return Ok(Value::Int(*i));
            }
            let r = py_round(*i as f64, Some(n)).map_err(fmt_err)?;
            Ok(Value::Int(int_from_float(r).map_err(fmt_err)?))
        }
        (Value::Float(f), None) => {
            let r = py_round(*f, None).map_err(fmt_err)?;
            Ok(Value::Int(int_from_float(r).map_err(fmt_err)?))
        }
        (Value::Float(f), Some(n)) => Ok(Value::Float(py_round(*f, Some(n)).map_err(fmt_err)?)),
        (v, _) => match me.call_dunder(v, "__round__", &args[1..])? {
            Some(r) => Ok(r),
            None => Err(type_err(format!(
                "type {} doesn't define __round__ method",
                v.type_name()
            ))),
        },
    }
}

/// Stable sort of `items` by `key`, optionally reversed (as `list.sort`).
pub fn sort_values(
    me: &mut Interp,
    items: Vec<Value>,
    key: Option<&Value>,
    reverse: bool,
) -> R<Vec<Value>> {
    let keys = match key {
        Some(f) if !matches!(f, Value::None) => {
            let mut ks = Vec::with_capacity(items.len());
            for x in &items {
                ks.push(me.call_value(f, vec![x.clone()], vec![])?);
            }
            ks
        }
        _ => items.clone(),
    };
    let mut idx: Vec<usize> = (0..items.len()).collect();
    // Merge sort through a fallible comparison (errors abort the sort).
    let mut failure = None;
    merge_sort(&mut idx, &mut |a, b| {
        if failure.is_some() {
            return false;
        }
        let (x, y) = if reverse {
            (&keys[a], &keys[b])
        } else {
            (&keys[b], &keys[a])
        };
        match me.lt(x, y) {
            Ok(r) => r,
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(idx.into_iter().map(|i| items[i].clone()).collect())
}

/// Stable merge sort; `before(a, b)` is true when `b` must come strictly after `a`...
/// expressed as: `before(a, b)` == "b < a" (take from the right only when strictly less).
fn merge_sort(v: &mut [usize], right_less: &mut dyn FnMut(usize, usize) -> bool) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mid = n / 2;
    merge_sort(&mut v[..mid], right_less);
    merge_sort(&mut v[mid..], right_less);
    let mut out = Vec::with_capacity(n);
    let (mut i, mut j) = (0, mid);
    while i < mid && j < n {
        if right_less(v[i], v[j]) {
            out.push(v[j]);
            j += 1;
        } else {
            out.push(v[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&v[i..mid]);
    out.extend_from_slice(&v[j..n]);
    v.copy_from_slice(&out);
}

fn sorted(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("sorted", kw, &["key", "reverse"])?;
    arity("sorted", args, 1, 1)?;
    let items = me.collect(&args[0])?;
    let reverse = match kwarg(kw, "reverse") {
        Some(v) => me.truthy(v)?,
        None => false,
    };
    Ok(Value::list(sort_values(
        me,
        items,
        kwarg(kw, "key"),
        reverse,
    )?))
}

fn reversed(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("reversed", args, 1, 1)?;
    if let Value::Instance(_) = &args[0] {
        if let Some(r) = me.call_dunder(&args[0], "__reversed__", &[])? {
            return Ok(r);
        }
    }
    let mut items = match &args[0] {
        Value::List(_)
        | Value::Tuple(_)
        | Value::Size(_)
        | Value::Str(_)
        | Value::Range(_)
        | Value::Instance(_) => me.collect(&args[0])?,
        v => {
            return Err(type_err(format!(
                "'{}' object is not reversible",
                v.type_name()
            )))
        }
    };
    items.reverse();
    Ok(me.make_iter(IterObj::Seq {
        items: items.into(),
        pos: 0,
    }))
}

fn enumerate(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("enumerate", kw, &["start"])?;
    arity("enumerate", args, 1, 2)?;
    let start = match args.get(1).or_else(|| kwarg(kw, "start")) {
        Some(v) => int_arg(v, "")?,
        None => 0,
    };
    let inner = me.get_iter(&args[0])?;
    Ok(me.make_iter(IterObj::Enumerate {
        inner,
        count: start,
    }))
}

fn zip(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let mut iters = Vec::with_capacity(args.len());
    for a in args {
        iters.push(me.get_iter(a)?);
    }
    Ok(me.make_iter(IterObj::Zip(iters)))
}

fn map(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    if args.len() < 2 {
        return Err(type_err("map() must have at least two arguments."));
    }
    let mut iters = Vec::with_capacity(args.len() - 1);
    for a in &args[1..] {
        iters.push(me.get_iter(a)?);
    }
    Ok(me.make_iter(IterObj::Map {
        func: args[0].clone(),
        iters,
    }))
}

fn filter(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("filter", args, 2, 2)?;
    let inner = me.get_iter(&args[1])?;
    Ok(me.make_iter(IterObj::Filter {
        func: args[0].clone(),
        inner,
    }))
}

fn any(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    if let Some(r) = on_tensor("any", args, kw) {
        return r;
    }
    arity("any", args, 1, 1)?;
    let mut found = false;
    me.for_each(&args[0], |me, v| {
        found = me.truthy(&v)?;
        Ok(!found)
    })?;
    Ok(Value::Bool(found))
}

fn all(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    if let Some(r) = on_tensor("all", args, kw) {
        return r;
    }
    arity("all", args, 1, 1)?;
    let done = me.for_each(&args[0], |me, v| me.truthy(&v))?;
    Ok(Value::Bool(done))
}

/// `compile(module)` is an `nn.Module` (as PyTorch's `OptimizedModule` is), not an
/// instance of the module's own class: true when `k` is the root base class `Module` of
/// the compiled module `m`'s class.
fn module_root(me: &Interp, m: &Value, k: &Rc<Class>) -> bool {
    let c = me.class_of(m);
    let root = c.mro.last().unwrap_or(&c);
    Rc::ptr_eq(root, k) && &*k.name == "Module" && matches!(m, Value::Instance(_))
}

fn class_check(me: &mut Interp, v: &Value, c: &Value, fname: &str, sub: bool) -> R<bool> {
    match c {
        Value::Class(k) => Ok(match (sub, v) {
            (true, Value::Class(vc)) => vc.is_subclass(k),
            (true, _) => return Err(type_err(format!("{fname}() arg 1 must be a class"))),
            (false, Value::Compiled(cf)) => {
                cf.module.as_ref().is_some_and(|m| module_root(me, m, k))
            }
            (false, _) => me.is_instance(v, k),
        }),
        Value::Tuple(ts) => {
            for t in ts.iter() {
                if class_check(me, v, t, fname, sub)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        _ => Err(type_err(format!(
            "{fname}() arg 2 must be a type or tuple of types"
        ))),
    }
}

fn isinstance(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("isinstance", args, 2, 2)?;
    Ok(Value::Bool(class_check(
        me,
        &args[0],
        &args[1],
        "isinstance",
        false,
    )?))
}

fn issubclass(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("issubclass", args, 2, 2)?;
    Ok(Value::Bool(class_check(
        me,
        &args[0],
        &args[1],
        "issubclass",
        true,
    )?))
}

fn attr_name(v: &Value) -> R<Rc<str>> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(type_err(format!(
            "attribute name must be string, not '{}'",
            other.type_name()
        ))),
    }
}

fn hasattr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("hasattr", args, 2, 2)?;
    let n = attr_name(&args[1])?;
    match me.get_attr(&args[0], &n) {
        Ok(_) => Ok(Value::Bool(true)),
        Err(e) if e.error.kind == ErrorKind::AttributeError => Ok(Value::Bool(false)),
        Err(e) => Err(e),
    }
}

fn getattr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("getattr", args, 2, 3)?;
    let n = attr_name(&args[1])?;
    match me.get_attr(&args[0], &n) {
        Err(e) if e.error.kind == ErrorKind::AttributeError && args.len() == 3 => {
            Ok(args[2].clone())
        }
        r => r,
    }
}

fn setattr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("setattr", args, 3, 3)?;
    let n = attr_name(&args[1])?;
    me.set_attr(&args[0], &n, args[2].clone())?;
    Ok(Value::None)
}

fn delattr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("delattr", args, 2, 2)?;
    let n = attr_name(&args[1])?;
    me.del_attr(&args[0], &n)?;
    Ok(Value::None)
}

fn repr(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("repr", args, 1, 1)?;
    Ok(Value::str(&me.repr(&args[0])?))
}

fn next(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("next", args, 1, 2)?;
    if let (Some(g), None) = (crate::interp::gen::as_gen(&args[0]), args.get(1)) {
        return me.gen_next_or_stop(&g, crate::interp::gen::Resume::Send(Value::None));
    }
    match me.next_of(&args[0])? {
        Some(v) => Ok(v),
        None => match args.get(1) {
            Some(d) => Ok(d.clone()),
            None => Err(err(ErrorKind::StopIteration, "")),
        },
    }
}

fn hash(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("hash", args, 1, 1)?;
    let k = me.key(args[0].clone())?;
    Ok(Value::Int(crate::interp::pyhash::value(&k.0, 0)))
}

fn id(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("id", args, 1, 1)?;
    let p = args[0].ptr_id();
    Ok(Value::Int(if p == 0 {
        match &args[0] {
            Value::Int(i) => *i,
            Value::Float(f) => f.to_bits() as i64,
            Value::Bool(b) => *b as i64 + 1,
            _ => 0,
        }
    } else {
        p as i64
    }))
}

fn callable(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("callable", args, 1, 1)?;
    Ok(Value::Bool(is_callable(&args[0])))
}

/// Whether a value can be called.
pub fn is_callable(v: &Value) -> bool {
    match v {
        Value::Func(_)
        | Value::Native(_)
        | Value::BoundMethod(_)
        | Value::BuiltinMethod(_)
        | Value::Class(_) => true,
        Value::Instance(i) => i.class.lookup("__call__").is_some(),
        _ => false,
    }
}

fn divmod(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    use crate::syntax::ast::BinOp;
    arity("divmod", args, 2, 2)?;
    let q = me.binop(BinOp::FloorDiv, &args[0], &args[1])?;
    let r = me.binop(BinOp::Mod, &args[0], &args[1])?;
    Ok(Value::tuple(vec![q, r]))
}

fn chr(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("chr", args, 1, 1)?;
    let i = int_arg(&args[0], "")?;
    let c = u32::try_from(i)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(|| value_err("chr() arg not in range(0x110000)"))?;
    Ok(Value::str(&c.to_string()))
}

fn ord(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("ord", args, 1, 1)?;
    match &args[0] {
        Value::Str(s) if s.chars().count() == 1 => {
            Ok(Value::Int(s.chars().next().map(|c| c as i64).unwrap_or(0)))
        }
        Value::Str(s) => Err(type_err(format!(
            "ord() expected a character, but string of length {} found",
            s.chars().count()
        ))),
        v => Err(type_err(format!(
            "ord() expected string of length 1, but {} found",
            v.type_name()
        ))),
    }
}

fn format(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("format", args, 1, 2)?;
    let spec = match args.get(1) {
        Some(Value::Str(s)) => s.to_string(),
        Some(v) => {
            return Err(type_err(format!(
                "format() argument 2 must be str, not {}",
                v.type_name()
            )))
        }
        None => String::new(),
    };
    Ok(Value::str(&me.format_spec(&args[0], &spec)?))
}

fn super_(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    match args {
        [Value::Class(c), obj] => Ok(Value::Super(Rc::new((c.clone(), obj.clone())))),
        [] => Err(err(ErrorKind::RuntimeError, "super(): no arguments")),
        _ => Err(type_err("super() argument 1 must be a type")),
    }
}
