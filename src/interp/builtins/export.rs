//! The script surface of static graphs and ONNX export: `trace(f, *args, input_names=,
//! output_names=, dynamic_axes=)` returning a `Graph`, the Graph's `inputs`/`outputs`
//! attributes and `save_onnx(path)` method, and `export_onnx(f_or_graph, ...)`.

use super::compile::wrap;
use super::export_axes::{self, shape_axes};
use super::tensor::te;
use super::{kwarg, no_kw};
use crate::compile::capture::cache::EntryKind;
use crate::compile::ir::{InputKind, IrOp, PathStep};
use crate::error::ErrorKind;
use crate::interp::capture::cache::CallKey;
use crate::interp::capture::compiled::reason_lines;
use crate::interp::capture::traced::{IoInfo, TracedGraph};
use crate::interp::value::{DictMap, Key, NativeImpl, Value};
use crate::interp::{err, type_err, value_err, Interp, R};
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::collections::HashSet;
use std::path::Path;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

pub const GLOBALS: &[(&str, NativeImpl)] = &[("trace", trace), ("export_onnx", export_onnx)];
pub const GRAPH_METHODS: &[&str] = &["save_onnx"];
const NAME_KW: &[&str] = &["input_names", "output_names", "dynamic_axes"];

/// `trace(f_or_module, *example_args, input_names=None, output_names=None,
/// dynamic_axes=None)`.
fn trace(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    // `torch.trace(matrix)`: a tensor is never a function to trace
    if let [Value::Tensor(t)] = args {
        return super::tensor_methods::tensor_method(t, "trace", &[], kw);
    }
    no_kw("trace", kw, NAME_KW)?;
    let (f, rest) = args
        .split_first()
        .ok_or_else(|| type_err("trace() needs a function or Module and example arguments"))?;
    Ok(Value::Graph(Rc::new(make_graph(me, f, rest, kw)?)))
}

/// `export_onnx(graph, path)` or `export_onnx(f_or_module, example_args, path,
/// input_names=None, output_names=None, dynamic_axes=None)`.
fn export_onnx(me: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    no_kw("export_onnx", kw, NAME_KW)?;
    match args {
        [Value::Graph(g), path] if kw.is_empty() => save(me, g, path),
        [Value::Graph(_), _] => Err(type_err(
            "export_onnx(graph, path): names are fixed when the graph is traced",
        )),
        [f, example, path] => {
            let ex = match example {
                Value::Tuple(t) => t.to_vec(),
                Value::List(l) => l.borrow().clone(),
                other => vec![other.clone()],
            };
            let g = make_graph(me, f, &ex, kw)?;
            save(me, &g, path)
        }
        _ => Err(type_err(
            "export_onnx() takes (graph, path) or (f_or_module, example_args, path)",
        )),
    }
}

fn save(me: &mut Interp, g: &TracedGraph, path: &Value) -> R<Value> {
    let Value::Str(p) = path else {
        return Err(type_err("export_onnx: path must be a str"));
    };
    let model = g.to_onnx(&me.sources).map_err(te)?;
    crate::onnx::save(&model, Path::new(&**p)).map_err(te)?;
    Ok(Value::None)
}

/// A Graph's methods (`g.save_onnx(path)`).
pub fn graph_method(me: &mut Interp, g: &TracedGraph, name: &str, args: &[Value]) -> R<Value> {
    match (name, args) {
        ("save_onnx", [path]) => save(me, g, path),
        ("save_onnx", _) => Err(type_err("save_onnx() takes one path")),
        _ => Err(err(
            ErrorKind::AttributeError,
            format!("'Graph' object has no attribute '{name}'"),
        )),
    }
}

/// A Graph's data attributes: `inputs`, `outputs` (lists of {"name", "dtype",
/// "shape"} dicts) and `name`.
pub fn graph_attr(g: &TracedGraph, name: &str) -> Option<Value> {
    match name {
        "inputs" => Some(io_list(&g.inputs)),
        "outputs" => Some(io_list(&g.outputs)),
        "name" => Some(Value::Str(g.name.clone())),
        _ => None,
    }
}

fn io_list(xs: &[IoInfo]) -> Value {
    let items = xs
        .iter()
        .map(|x| {
            let mut m = DictMap::default();
            m.insert(Key(Value::str("name")), Value::str(&x.name));
            m.insert(Key(Value::str("dtype")), Value::DType(x.dtype));
            let shape = x
                .shape
                .iter()
                .enumerate()
                .map(|(d, &n)| match x.axes.get(d).cloned().flatten() {
                    Some(name) => Value::str(&name),
                    None => Value::Int(n as i64),
                })
                .collect();
            m.insert(Key(Value::str("shape")), Value::tuple(shape));
            Value::Dict(Rc::new(RefCell::new(m)))
        })
        .collect();
    Value::list(items)
}

/// Captures `f(*args)` once (grad off) and takes the version out as a Graph.
fn make_graph(me: &mut Interp, f: &Value, args: &[Value], kw: Kw) -> R<TracedGraph> {
    let axes = export_axes::parse(kwarg(kw, "dynamic_axes"))?;
    let target = match f {
        Value::Compiled(cf) => cf.func.clone(),
        other => other.clone(),
    };
    let wrapped = wrap(me, &target, super::compile::Flags::default())?;
    let Value::Compiled(cf) = &wrapped else {
        return Err(type_err("trace() expects a function or a Module"));
    };
    let param_names = module_params(me, &target)?;
    let key = CallKey::new(args, &[]);
    let names = Names::new(me, &target, kw)?;
    let arg_info: Vec<(String, Vec<usize>)> = key
        .tensors
        .iter()
        .enumerate()
        .map(|(k, (t, path))| (names.input(path, k), t.shape().to_vec()))
        .collect();
    if let Some(a) = &axes {
        cf.cache.borrow_mut().dynamic_dims = a.input_dims(&arg_info)?;
    }
    let was = std::mem::replace(&mut me.compile_enabled, true);
    // A `for` loop the capture could not keep as a loop runs eagerly and is unrolled by
    // the next capture (`retry_unrolled`): call again while that adds loops to unroll.
    let res = loop {
        let unrolled = cf.cache.borrow().unroll.len();
        let res = {
            let _ng = crate::autograd::no_grad();
            me.call_compiled(cf, args.to_vec(), Vec::new())
        };
        let c = cf.cache.borrow();
        if res.is_err() || !c.entries.is_empty() || c.unroll.len() == unrolled {
            break res;
        }
    };
    me.compile_enabled = was;
    res?;
    let entry = {
        let mut c = cf.cache.borrow_mut();
        if c.entries.is_empty() {
            return Err(value_err("trace: the call was not captured"));
        }
        c.entries.swap_remove(0)
    };
    let (sym, consts) = (entry.sym, entry.consts);
    let g = match entry.kind {
        EntryKind::Graph(g) => *g,
        EntryKind::Eager(r) => {
            let lines = reason_lines(&me.sources, &r);
            return Err(err(
                ErrorKind::RuntimeError,
                format!(
                    "trace: {} cannot be captured as a static graph: {}",
                    cf.name,
                    lines.join("; ")
                ),
            ));
        }
    };
    if !g.effects.is_empty() {
        // A static Graph (and an ONNX model) is a pure function of its inputs.
        return Err(err(
            ErrorKind::NotImplementedError,
            format!(
                "trace: {} updates tensors in place or assigns .grad (a training step); \
                 a static Graph must be a pure function — use @compile for a whole step",
                cf.name
            ),
        ));
    }
    let graph = &g.compiled.graph;
    let info = graph.sym.as_deref();
    let sym_names = match &axes {
        Some(a) => a.symbol_names(graph, &me.sources, &arg_info)?,
        None => Vec::new(),
    };
    let mut inputs = Vec::new();
    let mut ext_names = Vec::new();
    for id in &graph.inputs {
        let Some(n) = graph.node(*id) else { continue };
        match &n.op {
            IrOp::Input {
                kind: InputKind::Arg(path),
                ..
            } => inputs.push(IoInfo {
                name: names.input(path, inputs.len()),
                dtype: n.dtype,
                shape: n.shape.clone(),
                axes: shape_axes(info, id.index(), n.shape.len(), &sym_names),
            }),
            IrOp::Input {
                kind: InputKind::External { name },
                ..
            } => ext_names.push(name.clone()),
            _ => {}
        }
    }
    let params = param_list(&g.externals, &ext_names, &param_names);
    let mut outputs = Vec::new();
    for (k, id) in graph.outputs.iter().enumerate() {
        let Some(n) = graph.node(*id) else { continue };
        let name = names.output(k, graph.outputs.len());
        let mut axes_k = shape_axes(info, id.index(), n.shape.len(), &sym_names);
        if let Some(a) = &axes {
            axes_k = a.output_axes(&name, axes_k)?;
        }
        outputs.push(IoInfo {
            name,
            dtype: n.dtype,
            shape: n.shape.clone(),
            axes: axes_k,
        });
    }
    if let Some(a) = &axes {
        let outs: Vec<(String, usize)> = outputs
            .iter()
            .map(|o| (o.name.clone(), o.shape.len()))
            .collect();
        a.check_outputs(&arg_info, &outs)?;
    }
    Ok(TracedGraph {
        name: cf.name.clone(),
        entry: g,
        consts,
        key: key.parts,
        inputs,
        outputs,
        params,
        sym,
    })
}

/// Parameter names: `named_parameters()` of a Module (or of the instance a bound method
/// belongs to); for a function, those of the Modules among its globals, prefixed with
/// the global's name (`model.0.weight`).
fn module_params(me: &mut Interp, f: &Value) -> R<Vec<(String, Tensor)>> {
    let mut out = Vec::new();
    match f {
        Value::Instance(_) => named_params(me, f, "", &mut out)?,
        Value::BoundMethod(bm) if matches!(bm.0, Value::Instance(_)) => {
            named_params(me, &bm.0, "", &mut out)?
        }
        Value::Func(fun) => {
            let globals: Vec<(String, Value)> = {
                let index = fun.globals.index.borrow();
                let slots = fun.globals.slots.borrow();
                index
                    .iter()
                    .filter_map(|(n, s)| Some((n.to_string(), slots.get(*s as usize)?.clone())))
                    .filter(|(_, v)| is_module(v))
                    .collect()
            };
            for (name, v) in globals {
                named_params(me, &v, &format!("{name}."), &mut out)?;
            }
        }
        _ => {}
    }
    Ok(out)
}

/// An instance of a class with `named_parameters` (an nn.Module).
fn is_module(v: &Value) -> bool {
    matches!(v, Value::Instance(i) if i.class.lookup("named_parameters").is_some())
}

fn named_params(
    me: &mut Interp,
    inst: &Value,
    prefix: &str,
    out: &mut Vec<(String, Tensor)>,
) -> R<()> {
    if !is_module(inst) {
        return Ok(());
    }
    let np = me.get_attr(inst, "named_parameters")?;
    let items = me.call_value(&np, Vec::new(), Vec::new())?;
    for item in me.collect(&items)? {
        if let Value::Tuple(t) = &item {
            if let [Value::Str(n), Value::Tensor(x)] = &t[..] {
                out.push((format!("{prefix}{n}"), x.clone()));
            }
        }
    }
    Ok(())
}

/// Initializer names: the module's parameter name when the tensor is one, else the
/// origin the capture recorded (`W`, `.scale`), made unique.
fn param_list(ext: &[Tensor], origin: &[String], named: &[(String, Tensor)]) -> Vec<String> {
    let mut used = HashSet::new();
    ext.iter()
        .enumerate()
        .map(|(i, t)| {
            let base = named
                .iter()
                .find(|(_, p)| p.same(t))
                .map(|(n, _)| n.clone())
                .or_else(|| origin.get(i).map(|o| o.trim_start_matches('.').to_string()))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("param{i}"));
            let mut name = base.clone();
            let mut k = 1;
            while !used.insert(name.clone()) {
                name = format!("{base}_{k}");
                k += 1;
            }
            name
        })
        .collect()
}

/// Input and output names: given by keyword, else the function's parameter names
/// (`x`, `x_1` for a tensor nested in argument `x`) and `output` / `output0`, ...
struct Names {
    inputs: Option<Vec<String>>,
    outputs: Option<Vec<String>>,
    params: Vec<String>,
}

impl Names {
    fn new(me: &mut Interp, f: &Value, kw: Kw) -> R<Names> {
        Ok(Names {
            inputs: str_list(kwarg(kw, "input_names"), "input_names")?,
            outputs: str_list(kwarg(kw, "output_names"), "output_names")?,
            params: func_params(me, f),
        })
    }

    fn input(&self, path: &[PathStep], k: usize) -> String {
        if let Some(n) = self.inputs.as_ref().and_then(|v| v.get(k)) {
            return n.clone();
        }
        let Some(PathStep::Index(i)) = path.first() else {
            return format!("input{k}");
        };
        let base = self.params.get(*i).cloned().unwrap_or(format!("input{i}"));
        let rest: Vec<String> = path[1..]
            .iter()
            .map(|s| match s {
                PathStep::Index(j) => j.to_string(),
                PathStep::Key(key) => key.trim_matches('"').to_string(),
            })
            .collect();
        if rest.is_empty() {
            base
        } else {
            format!("{base}_{}", rest.join("_"))
        }
    }

    fn output(&self, k: usize, n: usize) -> String {
        if let Some(name) = self.outputs.as_ref().and_then(|v| v.get(k)) {
            return name.clone();
        }
        if n == 1 {
            "output".into()
        } else {
            format!("output{k}")
        }
    }
}

/// The positional parameter names of a function, a bound method (without `self`) or a
/// Module's `forward`.
fn func_params(me: &mut Interp, f: &Value) -> Vec<String> {
    let (func, skip) = match f {
        Value::Func(_) => (f.clone(), 0),
        Value::BoundMethod(bm) => (bm.1.clone(), 1),
        Value::Instance(_) => match &me.get_attr(f, "forward") {
            Ok(Value::BoundMethod(bm)) => (bm.1.clone(), 1),
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    match &func {
        Value::Func(fun) => fun
            .proto
            .params
            .iter()
            .skip(skip)
            .map(|p| p.to_string())
            .collect(),
        _ => Vec::new(),
    }
}

fn str_list(v: Option<&Value>, what: &str) -> R<Option<Vec<String>>> {
    let items = match v {
        None | Some(Value::None) => return Ok(None),
        Some(Value::List(l)) => l.borrow().clone(),
        Some(Value::Tuple(t)) => t.to_vec(),
        Some(_) => return Err(type_err(format!("{what} must be a list of str"))),
    };
    items
        .iter()
        .map(|x| match x {
            Value::Str(s) => Ok(s.to_string()),
            _ => Err(type_err(format!("{what} must be a list of str"))),
        })
        .map(|r| r.map(Some))
        .collect::<R<Vec<_>>>()
        .map(|v| Some(v.into_iter().flatten().collect()))
}
