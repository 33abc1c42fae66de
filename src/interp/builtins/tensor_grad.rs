//! The autograd API of scripts: `no_grad()`/`enable_grad()` context managers,
//! `is_grad_enabled`, functional `grad(f)`, `Parameter`/`_Parameter`/`_is_parameter`,
//! `.backward()`, and `vars(obj)` (which `nn` uses to find parameters).

use super::tensor::{te, tensor_of, Args, Kw};
use super::{arity, native};
use crate::autograd;
use crate::interp::value::{DictMap, GradModeCtx, Key, NativeImpl, Value};
use crate::interp::{type_err, Interp, R};
use crate::tensor::Tensor;
use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("no_grad", no_grad),
    ("enable_grad", enable_grad),
    ("is_grad_enabled", is_grad_enabled),
    ("grad", grad),
    ("Parameter", parameter),
    ("_Parameter", parameter),
    ("_is_parameter", is_parameter),
    ("vars", vars),
    ("_autograd_grad", autograd_grad),
    ("_node_mark", node_mark),
    ("_name_node", name_node),
];

/// `_node_mark()`: the id the next autograd node gets (a stdlib composite takes it on
/// entry, then names its result's node with `_name_node`).
fn node_mark(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    Args::new("_node_mark", args, kw).check(0, &[])?;
    Ok(Value::Int(autograd::next_node_id() as i64))
}

/// `_name_node(out, mark, name)`: names `out`'s node as PyTorch's one node for the
/// composite that made it (only a node made since `mark`); returns `out`.
fn name_node(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_name_node", args, kw);
    a.check(3, &[])?;
    let out = a.tensor(0, "out")?;
    let mark = a.int(1, "mark")?.unwrap_or(0).max(0) as u64;
    let name = match a.required(2, "name")? {
        Value::Str(s) => autograd::names::stdlib_composite(s),
        _ => None,
    };
    let name = name.ok_or_else(|| type_err("_name_node: not a composite's node name"))?;
    autograd::names::name_composite(&out, mark, name);
    Ok(args[0].clone())
}

/// Methods of the `no_grad()` object.
pub const GRAD_MODE_METHODS: &[&str] = &["__enter__", "__exit__"];

fn mode(args: &[Value], kw: Kw, name: &str, enable: bool) -> R<Value> {
    Args::new(name, args, kw).check(0, &[])?;
    Ok(Value::GradMode(Rc::new(GradModeCtx {
        enable,
        saved: RefCell::new(Vec::new()),
        before_call: std::cell::Cell::new(None),
    })))
}

fn no_grad(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    mode(args, kw, "no_grad", false)
}

fn enable_grad(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    mode(args, kw, "enable_grad", true)
}

fn is_grad_enabled(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("is_grad_enabled", args, 0, 0)?;
    Ok(Value::Bool(autograd::is_grad_enabled()))
}

/// `__enter__` / `__exit__` of a grad-mode object.
pub fn grad_mode_method(g: &GradModeCtx, name: &str) -> R<Value> {
    match name {
        "__enter__" => {
            let switched = autograd::set_grad_enabled(g.enable);
            let prev = g.before_call.take().unwrap_or(switched);
            g.saved.borrow_mut().push(prev);
            Ok(Value::None)
        }
        "__exit__" => {
            if let Some(prev) = g.saved.borrow_mut().pop() {
                autograd::set_grad_enabled(prev);
            }
            Ok(Value::Bool(false))
        }
        _ => Err(type_err(format!("'no_grad' object has no method '{name}'"))),
    }
}

/// `grad(f)`: a callable computing the gradients of `f` (a bound native holding `f`).
fn grad(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("grad", args, kw);
    a.check(1, &["func"])?;
    let f = a.required(0, "func")?.clone();
    Ok(Value::BoundMethod(Rc::new((f, native("grad", grad_call)))))
}

/// `grad(f)(*args)`: each tensor argument becomes a fresh leaf; the gradient of
/// `f(*args)` (a one-element tensor) with respect to each is returned (one tensor, or a
/// tuple for several), leaving every `.grad` untouched.
fn grad_call(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let Some((f, rest)) = args.split_first() else {
        return Err(type_err("grad: missing function"));
    };
    let mut leaves = Vec::new();
    let mut call_args = Vec::with_capacity(rest.len());
    for v in rest {
        match v {
            Value::Tensor(t) => {
                let leaf = t.detach();
                leaf.set_requires_grad(true).map_err(te)?;
                leaves.push(leaf.clone());
                call_args.push(Value::Tensor(leaf));
            }
            other => call_args.push(other.clone()),
        }
    }
    if leaves.is_empty() {
        return Err(type_err(
            "grad(f)(...): expected at least one Tensor argument",
        ));
    }
    let out = {
        let _on = autograd::enable_grad();
        me.call_value(f, call_args, kw.to_vec())?
    };
    let Value::Tensor(out) = &out else {
        return Err(type_err(format!(
            "grad: the function must return a Tensor, got {}",
            out.type_name()
        )));
    };
    let mut grads = autograd::grad_of(out, &leaves).map_err(te)?;
    if grads.len() == 1 {
        if let Some(g) = grads.pop() {
            return Ok(Value::Tensor(g));
        }
    }
    Ok(Value::tuple(grads.into_iter().map(Value::Tensor).collect()))
}

/// `Parameter(t, requires_grad=True)`: a leaf sharing `t`'s data, marked as a parameter.
fn parameter(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("Parameter", args, kw);
    a.check(2, &["data", "requires_grad"])?;
    let t = a.tensor(0, "data")?;
    let p = t.detach();
    p.set_requires_grad(a.flag(1, "requires_grad", true)?)
        .map_err(te)?;
    p.mark_parameter();
    Ok(Value::Tensor(p))
}

fn is_parameter(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("_is_parameter", args, 1, 1)?;
    Ok(Value::Bool(
        matches!(&args[0], Value::Tensor(t) if t.is_parameter()),
    ))
}

/// `vars(obj)`: an instance's live `__dict__`; a class's or module's attributes as a
/// dict, in assignment order.
fn vars(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("vars", args, 1, 1)?;
    let items: Vec<(Rc<str>, Value)> = match &args[0] {
        Value::Instance(i) => return Ok(i.attr_dict()),
        Value::Class(c) => c
            .dict
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        Value::Module(m) => m.items(),
        other => {
            return Err(type_err(format!(
                "vars() argument must have __dict__ attribute (got {})",
                other.type_name()
            )))
        }
    };
    let mut m = DictMap::default();
    for (k, v) in items {
        m.insert(Key(Value::Str(k)), v);
    }
    Ok(Value::Dict(Rc::new(RefCell::new(m))))
}

/// `t.backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)`,
/// running the tensors' gradient hooks (`retain_graph` defaults to `create_graph`, as
/// PyTorch's); `inputs` (a tensor or a sequence) limits which `.grad` accumulate.
pub fn backward(me: &mut Interp, t: &Tensor, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("backward", args, kw);
    a.check(4, &["gradient", "retain_graph", "create_graph", "inputs"])?;
    let inputs = match a.get(3, "inputs") {
        None | Some(Value::None) => None,
        Some(Value::Tensor(x)) => Some(vec![x.clone()]),
        Some(v) => Some(super::tensor_reduce::tensor_seq(v, "backward")?),
    };
    let g = match a.get(0, "gradient") {
        Some(v) => Some(tensor_of(v, "backward")?),
        None => None,
    };
    let create_graph = a.flag(2, "create_graph", false)?;
    let sweep = autograd::Sweep {
        retain_graph: a.flag(1, "retain_graph", create_graph)?,
        create_graph,
    };
    with_py_hooks(me, |hooks| {
        autograd::backward_hooked(t, g, sweep, inputs.as_deref(), hooks)
    })?;
    Ok(Value::None)
}

/// Runs a backward sweep `f` whose gradient hooks are Python callables: each is called
/// with the gradient, and a tensor it returns replaces it. An exception a hook raises
/// propagates as it is.
fn with_py_hooks<T>(
    me: &mut Interp,
    f: impl FnOnce(&mut autograd::HookRunner) -> crate::error::Result<T>,
) -> R<T> {
    let mut raised: Option<crate::interp::Exc> = None;
    let r = {
        let mut run = |h: &Rc<dyn Any>, g: &Tensor| -> crate::error::Result<Option<Tensor>> {
            let Some(func) = h.downcast_ref::<Value>() else {
                return Ok(None);
            };
            // A compiled replay would skip the hook's side effects: run eagerly instead.
            crate::ir::record::graph_break(crate::ir::record::BreakReason::Autograd(
                "a Python gradient hook",
            ));
            match &me.call_value(func, vec![Value::Tensor(g.clone())], Vec::new()) {
                Ok(Value::None) => Ok(None),
                Ok(Value::Tensor(t)) if t.shape() != g.shape() => {
                    let name = match func {
                        Value::Func(f) => f.proto.name.to_string(),
                        _ => "hook".into(),
                    };
                    Err(crate::error::Error::new(
                        crate::error::ErrorKind::RuntimeError,
                        format!(
                            "hook '{name}' has changed the size of value: expected {:?}, got {:?}",
                            g.shape(),
                            t.shape()
                        ),
                        None,
                    ))
                }
                Ok(Value::Tensor(t)) => Ok(Some(t.clone())),
                Ok(other) => Err(crate::error::Error::new(
                    crate::error::ErrorKind::TypeError,
                    format!(
                        "a gradient hook must return a Tensor or None, not {}",
                        other.type_name()
                    ),
                    None,
                )),
                Err(e) => {
                    raised = Some(e.clone());
                    Err(e.error.clone())
                }
            }
        };
        f(&mut run)
    };
    match raised {
        Some(e) => Err(e),
        None => r.map_err(te),
    }
}

thread_local! {
    static HANDLE: Rc<crate::interp::value::Class> =
        super::pyfuncs::native_class("RemovableHandle", &[("remove", remove_hook)]);
}

/// `t.register_hook(fn)`: `fn(grad)` runs when `t`'s gradient is computed (a tensor it
/// returns replaces the gradient); returns a handle whose `remove()` takes it away.
pub fn register_hook(t: &Tensor, args: &[Value], kw: Kw) -> R<Value> {
    let f = hook_arg("register_hook", t, args, kw)?;
    Ok(handle(t, t.add_hook(Rc::new(f))))
}

/// `p.register_post_accumulate_grad_hook(fn)`: `fn(p)` runs on the leaf `p` once a
/// backward updated `p.grad` (it must return None); returns a removable handle.
pub fn register_post_accumulate_grad_hook(t: &Tensor, args: &[Value], kw: Kw) -> R<Value> {
    let f = hook_arg("register_post_accumulate_grad_hook", t, args, kw)?;
    if !t.is_leaf() {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
        ));
    }
    Ok(handle(t, t.add_post_hook(Rc::new(f))))
}

/// The one `hook` argument of a hook registration on `t` (which must require grad).
fn hook_arg(fname: &str, t: &Tensor, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new(fname, args, kw);
    a.check(1, &["hook"])?;
    let Some(f) = a.get(0, "hook") else {
        return Err(type_err(format!(
            "{fname}() missing 1 required positional argument: 'hook'"
        )));
    };
    if !t.requires_grad() {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    Ok(f.clone())
}

/// A `RemovableHandle` for hook `id` of `t`.
fn handle(t: &Tensor, id: u64) -> Value {
    let class = HANDLE.with(|c| c.clone());
    super::pyfuncs::new_instance(
        class,
        &[
            ("_tensor", Value::Tensor(t.clone())),
            ("id", Value::Int(id as i64)),
        ],
    )
}

/// `handle.remove()`.
fn remove_hook(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("remove", args, 1, 1)?;
    let get = |k: &str| super::pyfuncs::attr(&args[0], k);
    if let (Value::Tensor(t), Value::Int(id)) = (&get("_tensor"), &get("id")) {
        t.remove_hook(*id as u64);
    }
    Ok(Value::None)
}

/// `_autograd_grad(output, inputs, grad_output, retain_graph, allow_unused,
/// create_graph)`: the primitive of stdlib/autograd.dl's `grad` (one output; a tuple
/// of gradients).
fn autograd_grad(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("_autograd_grad", args, 6, 6)?;
    let out = tensor_of(&args[0], "grad")?;
    if !out.requires_grad() {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            "element 0 of tensors does not require grad and does not have a grad_fn",
        ));
    }
    let inputs = super::tensor_reduce::tensor_seq(&args[1], "grad")?;
    let go = match &args[2] {
        Value::None => None,
        v => Some(tensor_of(v, "grad")?),
    };
    let sweep = autograd::Sweep {
        retain_graph: matches!(args[3], Value::Bool(true)),
        create_graph: matches!(args[5], Value::Bool(true)),
    };
    let allow_unused = matches!(args[4], Value::Bool(true));
    let grads = with_py_hooks(me, |hooks| {
        autograd::grad_wrt(&out, go, &inputs, sweep, hooks)
    })?;
    let mut vals = Vec::with_capacity(grads.len());
    for (i, g) in grads.into_iter().enumerate() {
        match g {
            Some(g) => vals.push(Value::Tensor(g)),
            None if allow_unused => vals.push(Value::None),
            None => {
                return Err(crate::interp::err(
                    crate::error::ErrorKind::RuntimeError,
                    format!("The differentiated Tensor at index {i} appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."),
                ))
            }
        }
    }
    Ok(Value::tuple(vals))
}
