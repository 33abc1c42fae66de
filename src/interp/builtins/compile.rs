//! The script surface of `@compile`: `compile(f_or_module, dynamic=False)` (also a
//! decorator, with or without arguments), `graph(f, *args, format="text"|"dot")`,
//! `explain(f, *args)` and `compile_stats(f)`.

use super::{kwarg, native, no_kw};
use crate::compile::capture::cache::EntryKind;
use crate::interp::capture::cache::{Cache, CallKey};
use crate::interp::capture::compiled::{guard_text, reason_lines, CompiledFn};
use crate::interp::value::{DictMap, Key, NativeImpl, Value};
use crate::interp::{type_err, value_err, Interp, R};
use std::cell::RefCell;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("compile", compile),
    ("graph", graph),
    ("explain", explain),
    ("compile_stats", compile_stats),
];

/// `compile(f)`, `compile(module)`, `compile(dynamic=True, check=True)` (a decorator).
fn compile(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("compile", kw, &["dynamic", "check"])?;
    let mut flag = |name: &str| match kwarg(kw, name) {
        None => Ok(false),
        Some(v) => me.truthy(v),
    };
    let flags = Flags {
        dynamic: flag("dynamic")?,
        check: flag("check")?,
    };
    match args {
        [] => Ok(Value::BoundMethod(Rc::new((
            Value::Int(i64::from(flags.dynamic) | i64::from(flags.check) << 1),
            native("compile", compile_flagged),
        )))),
        [f] => wrap(me, f, flags),
        _ => Err(type_err("compile() takes 1 positional argument")),
    }
}

/// The keyword options of `compile`.
#[derive(Clone, Copy, Default)]
pub(super) struct Flags {
    pub dynamic: bool,
    pub check: bool,
}

/// The decorator `compile(dynamic=..., check=...)` returns: `args` = [flag bits, f].
fn compile_flagged(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("compile", kw, &[])?;
    match args {
        [Value::Int(bits), f] => {
            let flags = Flags {
                dynamic: bits & 1 != 0,
                check: bits & 2 != 0,
            };
            wrap(me, f, flags)
        }
        _ => Err(type_err("compile(...) decorator takes one function")),
    }
}

pub(super) fn wrap(me: &mut Interp, f: &Value, flags: Flags) -> R<Value> {
    let mut module = None;
    let (func, name) = match f {
        Value::Compiled(_) => return Ok(f.clone()),
        Value::Func(func) => (f.clone(), func.proto.name.clone()),
        Value::BoundMethod(bm) => {
            let name = match &bm.1 {
                Value::Func(func) => func.proto.name.clone(),
                _ => "method".into(),
            };
            (f.clone(), name)
        }
        Value::Instance(inst) => {
            let fwd = me.get_attr(f, "forward")?;
            module = Some(f.clone());
            (fwd, inst.class.name.clone())
        }
        other => {
            return Err(type_err(format!(
                "compile() expects a function or a Module, got {}",
                other.type_name()
            )))
        }
    };
    Ok(Value::Compiled(Rc::new(CompiledFn {
        func,
        name,
        dynamic: flags.dynamic,
        check: flags.check,
        module,
        cache: RefCell::new(Cache::default()),
    })))
}

/// The compiled function `f` names (a plain function or module is compiled afresh).
fn compiled_of(me: &mut Interp, f: &Value) -> R<Rc<CompiledFn>> {
    match &wrap(me, f, Flags::default())? {
        Value::Compiled(cf) => Ok(cf.clone()),
        _ => Err(type_err("expected a compiled function")),
    }
}

/// Why no version is captured while compilation is off.
const COMPILE_OFF: &str = "compilation is off (KILN_EAGER=1 or Engine::set_compile(false))";

/// Selects (capturing if needed) the version `args` pick; returns its entry index. `who`
/// (`graph`, `explain`) names the caller in the error.
fn select(me: &mut Interp, cf: &Rc<CompiledFn>, args: &[Value], who: &str) -> R<usize> {
    if !me.compile_enabled {
        return Err(value_err(format!("{who}: {COMPILE_OFF}")));
    }
    let key = CallKey::new(args, &[]);
    if let Ok(i) = cf.cache.borrow().lookup(&key) {
        return Ok(i);
    }
    me.call_compiled(cf, args.to_vec(), Vec::new())?;
    let c = cf.cache.borrow();
    c.lookup(&key)
        .or_else(|_| c.last.ok_or(()))
        .map_err(|_| value_err(format!("{who}: no captured version (the cache is full)")))
}

/// `graph(f, *args, format="text")`: the IR of the version `args` select.
fn graph(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("graph", kw, &["format"])?;
    let dot = match kwarg(kw, "format") {
        None => false,
        Some(Value::Str(s)) if &**s == "text" => false,
        Some(Value::Str(s)) if &**s == "dot" => true,
        Some(_) => return Err(value_err("graph: format must be \"text\" or \"dot\"")),
    };
    let (f, rest) = args
        .split_first()
        .ok_or_else(|| type_err("graph() needs a function"))?;
    let cf = compiled_of(me, f)?;
    let i = select(me, &cf, rest, "graph")?;
    Ok(Value::str(&entry_text(me, &cf, i, dot)))
}

/// The IR text (or DOT) of entry `i`, or the reasons it runs eagerly.
pub fn entry_text(me: &Interp, cf: &CompiledFn, i: usize, dot: bool) -> String {
    let c = cf.cache.borrow();
    match c.entries.get(i).map(|e| &e.kind) {
        Some(EntryKind::Graph(g)) if dot => g.compiled.graph.to_dot(),
        Some(EntryKind::Graph(g)) => g.compiled.to_text(Some(&me.sources)),
        Some(EntryKind::Eager(r)) => {
            let lines = reason_lines(&me.sources, r);
            format!("# {} runs eagerly:\n# {}\n", cf.name, lines.join("\n# "))
        }
        None => format!("# {}: no captured version\n", cf.name),
    }
}

/// `explain(f, *args)`: each fallback reason with file:line:col, or "captured: no
/// graph breaks".
fn explain(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("explain", kw, &[])?;
    let (f, rest) = args
        .split_first()
        .ok_or_else(|| type_err("explain() needs a function"))?;
    let cf = compiled_of(me, f)?;
    if !me.compile_enabled {
        return Ok(Value::str(&format!(
            "{} runs eagerly: {COMPILE_OFF}",
            cf.name
        )));
    }
    let i = select(me, &cf, rest, "explain")?;
    let c = cf.cache.borrow();
    let text = match c.entries.get(i).map(|e| &e.kind) {
        Some(EntryKind::Eager(r)) => {
            let lines = reason_lines(&me.sources, r);
            format!("{} falls back to eager:\n  {}", cf.name, lines.join("\n  "))
        }
        _ => "captured: no graph breaks".to_string(),
    };
    Ok(Value::str(&text))
}

/// `compile_stats(f)`: {"captures", "hits", "fallbacks", "warnings", "compile_ms",
/// "versions"}.
fn compile_stats(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("compile_stats", kw, &[])?;
    let Some(Value::Compiled(cf)) = args.first() else {
        return Err(type_err("compile_stats() expects a compiled function"));
    };
    let c = cf.cache.borrow();
    let mut m = DictMap::default();
    let n = |v: u64| Value::Int(i64::try_from(v).unwrap_or(i64::MAX));
    m.insert(Key(Value::str("captures")), n(c.stats.captures));
    m.insert(Key(Value::str("hits")), n(c.stats.hits));
    m.insert(Key(Value::str("fallbacks")), n(c.stats.fallbacks));
    m.insert(Key(Value::str("warnings")), n(c.stats.warnings));
    m.insert(
        Key(Value::str("compile_ms")),
        Value::Float(c.stats.capture_us as f64 / 1e3),
    );
    m.insert(
        Key(Value::str("versions")),
        Value::Int(c.entries.len() as i64),
    );
    // Per version, what its shape guard accepts.
    let guards = c.entries.iter().map(|e| match &e.kind {
        EntryKind::Graph(g) => Value::str(&guard_text(&g.compiled.graph)),
        EntryKind::Eager(_) => Value::str("eager"),
    });
    m.insert(Key(Value::str("guards")), Value::list(guards.collect()));
    Ok(Value::Dict(Rc::new(RefCell::new(m))))
}

/// The IR of the version a compiled value used last (the REPL's `:graph NAME`).
pub fn last_graph(me: &Interp, v: &Value) -> Option<String> {
    let Value::Compiled(cf) = v else { return None };
    let i = cf.cache.borrow().last?;
    Some(entry_text(me, cf, i, false))
}

/// The IR of the first captured version of a compiled value (`kiln graph FILE FUNC`).
pub fn first_graph(me: &Interp, v: &Value) -> Option<String> {
    let Value::Compiled(cf) = v else { return None };
    let has = !cf.cache.borrow().entries.is_empty();
    has.then(|| entry_text(me, cf, 0, false))
}
