//! `dynamic_axes=` of `trace`/`export_onnx`, in torch.onnx.export's form: a dict from
//! an input or output name to `{axis: "name"}` or a list of axes (named
//! `<tensor>_dynamic_axes_<k>`). Gives the argument dims the capture makes symbolic,
//! checks that they stayed symbolic, and names the symbolic axes of the graph's inputs
//! and outputs.

use crate::compile::capture::log::where_text;
use crate::compile::ir::{Graph, IrOp};
use crate::compile::sym::{fixing_node, SymInfo};
use crate::error::ErrorKind;
use crate::interp::value::Value;
use crate::interp::{err, type_err, value_err, Exc, R};
use crate::onnx::dim_text;
use crate::source::SourceMap;

/// One tensor's dynamic axes: (axis as given, its name).
type Axes = Vec<(i64, String)>;

/// The parsed `dynamic_axes` dict, in its order.
pub struct DynamicAxes {
    entries: Vec<(String, Axes)>,
}

fn axes_err() -> Exc {
    type_err("dynamic_axes must be a dict mapping a name to {axis: name} or a list of axes")
}

/// Parses `dynamic_axes` (None when absent or None).
pub fn parse(v: Option<&Value>) -> R<Option<DynamicAxes>> {
    let d = match v {
        None | Some(Value::None) => return Ok(None),
        Some(Value::Dict(d)) => d.borrow(),
        Some(_) => return Err(axes_err()),
    };
    let mut entries = Vec::new();
    for (k, v) in d.iter() {
        let Value::Str(name) = &k.0 else {
            return Err(axes_err());
        };
        entries.push((name.to_string(), axes_of(name, v)?));
    }
    Ok(Some(DynamicAxes { entries }))
}

fn axes_of(name: &str, v: &Value) -> R<Axes> {
    let items: Vec<Value> = match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        Value::Dict(d) => {
            let d = d.borrow();
            return d
                .iter()
                .map(|(k, v)| match (&k.0, v) {
                    (Value::Int(a), Value::Str(s)) if !s.is_empty() => Ok((*a, s.to_string())),
                    _ => Err(axes_err()),
                })
                .collect();
        }
        _ => return Err(axes_err()),
    };
    items
        .iter()
        .enumerate()
        .map(|(k, a)| match a {
            Value::Int(a) => Ok((*a, format!("{name}_dynamic_axes_{}", k + 1))),
            _ => Err(axes_err()),
        })
        .collect()
}

/// `axis` (negative: from the end) of a rank-`rank` tensor, or an error.
fn norm_axis(name: &str, axis: i64, rank: usize) -> R<usize> {
    let a = if axis < 0 { axis + rank as i64 } else { axis };
    usize::try_from(a)
        .ok()
        .filter(|&a| a < rank)
        .ok_or_else(|| {
            value_err(format!(
                "dynamic_axes: axis {axis} of {name} is out of range (it has {rank} dims)"
            ))
        })
}

impl DynamicAxes {
    /// The (argument slot, dim) pairs to make symbolic. `inputs`: each argument
    /// tensor's name and traced shape (other names may be outputs: `check_outputs`).
    pub fn input_dims(&self, inputs: &[(String, Vec<usize>)]) -> R<Vec<(usize, usize)>> {
        let mut out = Vec::new();
        for (name, axes) in &self.entries {
            let Some(slot) = inputs.iter().position(|(n, _)| n == name) else {
                continue;
            };
            let shape = &inputs[slot].1;
            for (a, _) in axes {
                let d = norm_axis(name, *a, shape.len())?;
                if shape[d] < 2 {
                    return Err(value_err(format!(
                        "dynamic_axes: axis {d} of {name} has size {} in the example; trace \
                         with a size of at least 2 (sizes 0 and 1 are specialised)",
                        shape[d]
                    )));
                }
                out.push((slot, d));
            }
        }
        Ok(out)
    }

    /// The name given to axis `d` of input or output `name`.
    fn name_of(&self, name: &str, d: usize, rank: usize) -> Option<String> {
        let (_, axes) = self.entries.iter().find(|(n, _)| n == name)?;
        axes.iter()
            .find(|(a, _)| norm_axis(name, *a, rank).ok() == Some(d))
            .map(|(_, s)| s.clone())
    }

    /// Each symbol's name: that of the first input axis bound to it. Errors when a
    /// requested input axis did not stay symbolic, naming the node of `graph` that
    /// fixes it.
    pub fn symbol_names(
        &self,
        graph: &Graph,
        sources: &SourceMap,
        inputs: &[(String, Vec<usize>)],
    ) -> R<Vec<String>> {
        let info = graph.sym.as_deref();
        let mut names = vec![String::new(); info.map_or(0, SymInfo::num_symbols)];
        for (slot, (name, shape)) in inputs.iter().enumerate() {
            for d in 0..shape.len() {
                let Some(given) = self.name_of(name, d, shape.len()) else {
                    continue;
                };
                let sym = info
                    .and_then(|i| i.inputs.get(slot))
                    .and_then(|dims| dims.get(d).copied().flatten());
                let Some(s) = sym else {
                    return Err(fixed_err(name, d, graph, sources, slot));
                };
                let other = names.iter().position(|n| *n == given);
                if other.is_some_and(|o| o != s as usize) {
                    return Err(value_err(format!(
                        "dynamic_axes: '{given}' names axes that can differ in size (the \
                         traced graph does not tie them together); give them different names"
                    )));
                }
                if let Some(n) = names.get_mut(s as usize).filter(|n| n.is_empty()) {
                    *n = given;
                }
            }
        }
        Ok(names)
    }

    /// The axis names of output `name` from its symbolic shape (`dims`: None for a
    /// fixed dim); an axis named in `dynamic_axes` must be symbolic and takes its name.
    pub fn output_axes(&self, name: &str, dims: Vec<Option<String>>) -> R<Vec<Option<String>>> {
        let rank = dims.len();
        dims.into_iter()
            .enumerate()
            .map(|(d, text)| match (self.name_of(name, d, rank), text) {
                (Some(given), Some(_)) => Ok(Some(given)),
                (Some(_), None) => Err(value_err(format!(
                    "dynamic_axes: axis {d} of output {name} has a fixed size in the traced \
                     graph (it does not follow a dynamic input axis)"
                ))),
                (None, text) => Ok(text),
            })
            .collect()
    }

    /// Checks that every entry names an input or an output (given with its rank), and
    /// that an output's axes are in range.
    pub fn check_outputs(
        &self,
        inputs: &[(String, Vec<usize>)],
        outputs: &[(String, usize)],
    ) -> R<()> {
        for (name, axes) in &self.entries {
            if inputs.iter().any(|(n, _)| n == name) {
                continue;
            }
            let Some((_, rank)) = outputs.iter().find(|(n, _)| n == name) else {
                let ins: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
                let outs: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
                return Err(value_err(format!(
                    "dynamic_axes: no input or output named '{name}' (inputs: {}; outputs: {})",
                    ins.join(", "),
                    outs.join(", ")
                )));
            };
            for (a, _) in axes {
                norm_axis(name, *a, *rank)?;
            }
        }
        Ok(())
    }
}

/// The error for input axis `d` of `name` (argument slot `slot`) that the traced
/// graph fixes: where and why.
fn fixed_err(name: &str, d: usize, graph: &Graph, sources: &SourceMap, slot: usize) -> Exc {
    let cause = match fixing_node(graph, slot, d).and_then(|id| graph.node(id)) {
        Some(n) => format!(
            "{} at {} {}",
            n.op.name(),
            where_text(sources, n.span),
            why_fixed(&n.op)
        ),
        None => "Python code reads it (a size used as a number: a comparison, int(), \
                 a dict key, printing)"
            .to_string(),
    };
    err(
        ErrorKind::ValueError,
        format!("dynamic_axes: axis {d} of {name} cannot stay dynamic: the traced graph fixes its size: {cause}"),
    )
}

/// Why op `op` fixes the sizes reaching it.
fn why_fixed(op: &IrOp) -> &'static str {
    match op {
        IrOp::Reshape { .. } | IrOp::Expand { .. } => {
            "(its target size does not follow the dynamic axis: sizes Python computed from \
             it as plain ints, e.g. through int() or tuple(x.shape), or merged with \
             another dynamic dim)"
        }
        IrOp::Conv2d { .. } | IrOp::MaxPool2d { .. } | IrOp::AvgPool2d { .. } => {
            "(conv/pool sizes other than the batch are not followed symbolically)"
        }
        IrOp::Index { .. } => {
            "(tensor indexing, a boolean mask or a non-unit-step slice of the dynamic axis)"
        }
        IrOp::If(_) => {
            "(a branch side reshapes, expands or slices by a size of the dynamic axis, \
             which ONNX If bodies and compiled regions keep at the traced size)"
        }
        IrOp::Loop(_) => {
            "(a loop body uses it other than elementwise: a reshape, expand or slice by \
             its size, or a for loop's carried value)"
        }
        _ => "(its output size is not an affine function of the dynamic axis)",
    }
}

/// The `dim_param` text of each dim of a symbolic shape (None for fixed dims).
pub fn shape_axes(
    info: Option<&SymInfo>,
    node: usize,
    rank: usize,
    names: &[String],
) -> Vec<Option<String>> {
    let Some(shape) = info.and_then(|i| i.shapes.get(node)) else {
        return vec![None; rank];
    };
    shape
        .iter()
        .map(|e| e.as_const().is_none().then(|| dim_text(e, names)))
        .collect()
}
