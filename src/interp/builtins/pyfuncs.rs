//! Python builtins for scripts and data loading: `pow(a, b, m)`, `hex oct bin ascii`,
//! `dir`, `iter(callable, sentinel)`, `input`, `exit`/`quit`, and the `sys` module
//! (`argv`, `exit`, `stdout`/`stderr` objects with `write`/`flush`, `path`, ...).

use super::convert::int_arg;
use super::mathmod::module;
use super::{arity, native, Builtins};
use crate::error::ErrorKind;
use crate::interp::value::{Class, ClassKind, Instance, ModuleObj, Value};
use crate::interp::{err, type_err, value_err, Interp, R};
use crate::syntax::ast::BinOp;
use std::io::Write;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// Adds these builtins to the namespace.
pub fn register(b: &mut Builtins) {
    let table: &[(&str, super::NativeImpl)] = &[
        ("pow", pow),
        ("hex", hex),
        ("oct", oct),
        ("bin", bin),
        ("ascii", ascii),
        ("dir", dir),
        ("iter", iter),
        ("input", input),
        ("exit", exit),
        ("quit", exit),
    ];
    for (n, f) in table {
        b.names.insert((*n).into(), native(n, *f));
    }
}

fn pow(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("pow", args, 2, 3)?;
    match args.get(2) {
        None | Some(Value::None) => me.binop(BinOp::Pow, &args[0], &args[1]),
        Some(m) => {
            let (Ok(b), Ok(e), Ok(m)) =
                (int_arg(&args[0], ""), int_arg(&args[1], ""), int_arg(m, ""))
            else {
                return Err(type_err(
                    "pow() 3rd argument not allowed unless all arguments are integers",
                ));
            };
            if m == 0 {
                return Err(value_err("pow() 3rd argument cannot be 0"));
            }
            let mm = m.unsigned_abs() as u128;
            let mut base = (b as i128).rem_euclid(mm as i128) as u128;
            let mut e = e;
            if e < 0 {
                // the inverse of base modulo m, then the positive power
                let inv = mod_inverse(base as i128, mm as i128)
                    .ok_or_else(|| value_err("base is not invertible for the given modulus"))?;
                base = inv as u128;
                e = -e;
            }
            let mut r: u128 = 1 % mm;
            let mut e = e as u64;
            while e > 0 {
                if e & 1 == 1 {
                    r = r * base % mm;
                }
                base = base * base % mm;
                e >>= 1;
            }
            let r = r as i64;
            // Python: the result has the sign of m
            Ok(Value::Int(if m < 0 && r != 0 {
                r.wrapping_add(m)
            } else {
                r
            }))
        }
    }
}

fn mod_inverse(a: i128, m: i128) -> Option<i128> {
    let (mut old_r, mut r) = (a, m);
    let (mut old_s, mut s) = (1i128, 0i128);
    while r != 0 {
        let q = old_r / r;
        (old_r, r) = (r, old_r - q * r);
        (old_s, s) = (s, old_s - q * s);
    }
    (old_r == 1).then(|| old_s.rem_euclid(m))
}

fn radix(args: &[Value], name: &str, prefix: &str) -> R<Value> {
    arity(name, args, 1, 1)?;
    let n = int_arg(&args[0], "")?;
    let mag = n.unsigned_abs();
    let digits = match prefix {
        "0x" => format!("{mag:x}"),
        "0o" => format!("{mag:o}"),
        _ => format!("{mag:b}"),
    };
    let sign = if n < 0 { "-" } else { "" };
    Ok(Value::str(&format!("{sign}{prefix}{digits}")))
}

fn hex(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    radix(args, "hex", "0x")
}

fn oct(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    radix(args, "oct", "0o")
}

fn bin(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    radix(args, "bin", "0b")
}

fn ascii(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("ascii", args, 1, 1)?;
    Ok(Value::str(&crate::pyfmt::ascii_escape(&me.repr(&args[0])?)))
}

/// `dir(obj)`: the sorted attribute names (instance, class and bases, or module).
fn dir(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("dir", args, 0, 1)?;
    let names = match args.first() {
        None => {
            let mut n: Vec<String> = me
                .main
                .items()
                .into_iter()
                .map(|(k, _)| k.to_string())
                .collect();
            n.sort();
            n
        }
        Some(v) => crate::interp::suggest::attr_names(v),
    };
    Ok(Value::list(names.iter().map(|s| Value::str(s)).collect()))
}

thread_local! {
    static CALL_ITER: Rc<Class> = native_class("callable_iterator", &[("__iter__", self_ret), ("__next__", call_next)]);
    static STREAM: Rc<Class> = native_class("TextIOWrapper", &[("write", stream_write), ("flush", stream_flush)]);
}

/// A class whose methods are native functions (instances keep their state as attributes).
pub fn native_class(name: &str, methods: &[(&str, super::NativeImpl)]) -> Rc<Class> {
    let c = super::new_class(name, None, ClassKind::User);
    for (n, f) in methods {
        c.dict.borrow_mut().insert((*n).into(), native(n, *f));
    }
    c
}

/// A new instance of a native class with these attributes.
pub fn new_instance(class: Rc<Class>, attrs: &[(&str, Value)]) -> Value {
    let inst = Instance::new(class);
    for (k, v) in attrs {
        inst.put_attr(*k, v.clone());
    }
    let inst = Rc::new(inst);
    crate::interp::gc::track_instance(&inst);
    Value::Instance(inst)
}

pub(super) fn attr(v: &Value, k: &str) -> Value {
    match v {
        Value::Instance(i) => i.attr(k).unwrap_or(Value::None),
        _ => Value::None,
    }
}

/// `iter(obj)` or `iter(callable, sentinel)`.
fn iter(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("iter", args, 1, 2)?;
    match args.get(1) {
        None => me.get_iter(&args[0]),
        Some(sentinel) => {
            if !super::funcs::is_callable(&args[0]) {
                return Err(type_err("iter(v, w): v must be callable"));
            }
            let c = CALL_ITER.with(|c| c.clone());
            Ok(new_instance(
                c,
                &[("_func", args[0].clone()), ("_sentinel", sentinel.clone())],
            ))
        }
    }
}

fn self_ret(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    Ok(args.first().cloned().unwrap_or(Value::None))
}

fn call_next(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    let this = args.first().cloned().unwrap_or(Value::None);
    let f = attr(&this, "_func");
    if matches!(f, Value::None) {
        return Err(err(ErrorKind::StopIteration, ""));
    }
    let v = me.call_value(&f, vec![], vec![])?;
    if me.eq(&v, &attr(&this, "_sentinel"))? {
        if let Value::Instance(i) = &this {
            i.put_attr("_func", Value::None);
        }
        return Err(err(ErrorKind::StopIteration, ""));
    }
    Ok(v)
}

/// `input(prompt='')`: one line of standard input without its newline; EOFError at
/// the end.
fn input(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("input", args, 0, 1)?;
    if let Some(p) = args.first() {
        let p = me.str_of(p)?;
        me.write(&p);
    }
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) => Err(err(ErrorKind::EOFError, "EOF when reading a line")),
        Ok(_) => {
            if line.ends_with('\n') {
                line.pop();
                if line.ends_with('\r') {
                    line.pop();
                }
            }
            Ok(Value::str(&line))
        }
        Err(e) => Err(err(ErrorKind::OSError, e.to_string())),
    }
}

/// `exit(code=None)` / `quit()` / `sys.exit()`: raises SystemExit.
pub fn exit(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("exit", args, 0, 1)?;
    let code = args.first().cloned().unwrap_or(Value::None);
    let cls = match me.b.names.get("SystemExit") {
        Some(Value::Class(c)) => c.clone(),
        _ => return Err(err(ErrorKind::RuntimeError, "SystemExit is missing")),
    };
    let v = crate::interp::exc::new_exc_instance(&cls, vec![code.clone()]);
    if let Value::Instance(i) = &v {
        i.put_attr("code", code);
    }
    Err(me.exc_from_value(v)?)
}

/// `sys.stdout.write(s)` / `sys.stderr.write(s)`.
fn stream_write(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("write", args, 2, 2)?;
    let Value::Str(s) = &args[1] else {
        return Err(type_err(format!(
            "write() argument must be str, not {}",
            args[1].type_name()
        )));
    };
    if matches!(attr(&args[0], "_err"), Value::Bool(true)) {
        if let Some(hook) = me.err_output.as_mut() {
            hook(s);
        } else {
            let mut e = std::io::stderr();
            e.write_all(s.as_bytes())
                .map_err(|e| err(ErrorKind::OSError, e.to_string()))?;
        }
    } else {
        me.write(s);
    }
    Ok(Value::Int(s.chars().count() as i64))
}

fn stream_flush(_: &mut Interp, _: &[Value], _: Kw) -> R<Value> {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    Ok(Value::None)
}

/// The `sys` module.
pub fn sys_module(me: &Interp) -> Rc<ModuleObj> {
    let stream = |name: &str, is_err: bool| {
        new_instance(
            STREAM.with(|c| c.clone()),
            &[
                ("name", Value::str(name)),
                ("encoding", Value::str("utf-8")),
                ("_err", Value::Bool(is_err)),
            ],
        )
    };
    let argv = match me.main.get("argv") {
        Some(v @ Value::List(_)) => v,
        _ => Value::list(vec![Value::str("")]),
    };
    let dir = me.main.dir.borrow().clone();
    let path = Value::list(vec![Value::str(
        &dir.map(|d| d.display().to_string()).unwrap_or_default(),
    )]);
    let version = Value::tuple(vec![
        Value::Int(3),
        Value::Int(11),
        Value::Int(0),
        Value::str("final"),
        Value::Int(0),
    ]);
    module(
        "sys",
        &[("exit", exit)],
        &[
            ("argv", argv),
            ("stdout", stream("<stdout>", false)),
            ("stderr", stream("<stderr>", true)),
            ("path", path),
            ("version_info", version),
            ("version", Value::str("3.11.0 (Kiln)")),
            ("maxsize", Value::Int(i64::MAX)),
            ("platform", Value::str(std::env::consts::OS)),
            ("byteorder", Value::str("little")),
        ],
    )
}
