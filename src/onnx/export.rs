//! Assembles an ONNX ModelProto (opset 18) from a captured IR graph: argument inputs
//! become graph inputs, parameters and constants initializers, each compute node one
//! or a few ONNX nodes (less the input projections an ONNX LSTM/GRU computes itself:
//! `rnn::folded`); then encodes it with prost and writes it atomically.

use super::builder::{dims_i64, onnx_dtype, tensor_proto, unsupported, Builder};
use super::lower::Lower;
use super::proto::{
    Dimension, GraphProto, ModelProto, OperatorSetIdProto, TensorShapeProto, TensorTypeProto,
    TypeProto, ValueInfoProto,
};
use super::rnn::{self, Params};
use crate::compile::capture::log::where_text;
use crate::compile::ir::{Graph, InputKind, IrOp, NodeId};
use crate::error::{Error, ErrorKind, Result};
use crate::source::SourceMap;
use crate::tensor::dtype::DType;
use crate::tensor::Tensor;
use prost::Message;
use std::collections::HashSet;
use std::path::Path;

/// The opset export targets (18: BitwiseAnd/Or/Xor/Not for int64 `& | ^ ~`).
pub const OPSET: i64 = 18;
/// The ONNX IR version that goes with opset 18.
pub const IR_VERSION: i64 = 8;

/// What to export: the graph, its parameter values and the names of its interface.
pub struct ExportSpec<'a> {
    pub name: &'a str,
    pub graph: &'a Graph,
    /// Values of the `External` inputs, in input-slot order.
    pub externals: &'a [Tensor],
    /// One per argument input.
    pub input_names: &'a [String],
    /// One per external input (initializer names).
    pub param_names: &'a [String],
    /// One per graph output.
    pub output_names: &'a [String],
    /// Per argument input, per dim: the `dim_param` of a dynamic axis (None: the
    /// traced size). Empty: every axis static.
    pub input_axes: &'a [Vec<Option<String>>],
    /// The same for each graph output.
    pub output_axes: &'a [Vec<Option<String>>],
}

fn value_err(msg: String) -> Error {
    Error::new(ErrorKind::ValueError, msg, None)
}

/// A ValueInfo of a tensor of dtype `dtype` and static shape `shape`.
pub fn typed_value_info(name: &str, dtype: DType, shape: &[usize]) -> ValueInfoProto {
    named_value_info(name, dtype, shape, None)
}

/// A ValueInfo whose dims named in `axes` are symbolic (`dim_param`), the others
/// `shape`'s sizes.
pub fn named_value_info(
    name: &str,
    dtype: DType,
    shape: &[usize],
    axes: Option<&Vec<Option<String>>>,
) -> ValueInfoProto {
    let dim = dims_i64(shape)
        .into_iter()
        .enumerate()
        .map(
            |(i, d)| match axes.and_then(|a| a.get(i)).cloned().flatten() {
                Some(p) => Dimension {
                    dim_value: None,
                    dim_param: Some(p),
                },
                None => Dimension {
                    dim_value: Some(d),
                    dim_param: None,
                },
            },
        )
        .collect();
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: onnx_dtype(dtype),
                shape: Some(TensorShapeProto { dim }),
            }),
        }),
    }
}

/// Builds the model.
pub fn export(spec: &ExportSpec, sources: &SourceMap) -> Result<ModelProto> {
    check_names(spec)?;
    let g = spec.graph;
    let mut lw = Lower::new(Builder::default(), g, sources, String::new());
    let slots = slot_names(spec)?;
    lw.init_symbols(&slots, symbol_names(spec))?;
    lw.params = params(spec)?;
    let folded = rnn::folded(g, &lw.params);
    let mut inputs = Vec::new();
    let mut n_arg = 0usize;
    for (i, node) in g.nodes.iter().enumerate() {
        lw.at = where_text(sources, node.span);
        lw.b.doc = lw.at.clone();
        if folded.get(i).copied().unwrap_or(false) {
            continue;
        }
        let name = match &node.op {
            IrOp::Input {
                kind: InputKind::Arg(_),
                ..
            } => {
                let name = pick(spec.input_names, n_arg, "input")?;
                let axes = spec.input_axes.get(n_arg);
                n_arg += 1;
                inputs.push(named_value_info(&name, node.dtype, &node.shape, axes));
                name
            }
            IrOp::Input {
                kind: InputKind::External { .. },
                ..
            } => {
                let (name, t) = lw
                    .params
                    .get(&i)
                    .cloned()
                    .ok_or_else(|| value_err("export_onnx: a parameter has no value".into()))?;
                lw.b.init_tensor(&name, t)?;
                name
            }
            IrOp::Const(t) => {
                let name = format!("const_{i}");
                lw.b.inits.push(tensor_proto(&name, t)?);
                name
            }
            _ => lw.node(NodeId(i as u32))?,
        };
        if let Some(v) = lw.vals.get_mut(i) {
            *v = name;
        }
    }
    let outputs = outputs(&mut lw, spec)?;
    let graph = GraphProto {
        node: lw.b.nodes,
        name: spec.name.to_string(),
        initializer: lw.b.inits,
        doc_string: String::new(),
        input: inputs,
        output: outputs,
        value_info: Vec::new(),
    };
    Ok(ModelProto {
        ir_version: IR_VERSION,
        producer_name: "kiln".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        domain: String::new(),
        model_version: 1,
        doc_string: String::new(),
        graph: Some(graph),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: OPSET,
        }],
    })
}

/// Each parameter (`External` input) node's initializer name and value.
fn params<'a>(spec: &ExportSpec<'a>) -> Result<Params<'a>> {
    let mut out = Params::new();
    let exts = spec.graph.nodes.iter().enumerate().filter(|(_, n)| {
        matches!(
            n.op,
            IrOp::Input {
                kind: InputKind::External { .. },
                ..
            }
        )
    });
    for (k, (i, _)) in exts.enumerate() {
        let name = pick(spec.param_names, k, "parameter")?;
        let t = spec
            .externals
            .get(k)
            .ok_or_else(|| value_err("export_onnx: a parameter has no value".into()))?;
        out.insert(i, (name, t));
    }
    Ok(out)
}

/// The name of each input slot (argument inputs; empty for the others).
fn slot_names(spec: &ExportSpec) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut n_arg = 0usize;
    for id in &spec.graph.inputs {
        let arg = matches!(
            spec.graph.node(*id).map(|n| &n.op),
            Some(IrOp::Input {
                kind: InputKind::Arg(_),
                ..
            })
        );
        if arg {
            out.push(pick(spec.input_names, n_arg, "input")?);
            n_arg += 1;
        } else {
            out.push(String::new());
        }
    }
    Ok(out)
}

/// Each symbol's `dim_param` name: that of the first argument input axis bound to it
/// (empty when none is named: `dim_text` then writes `s<k>`).
fn symbol_names(spec: &ExportSpec) -> Vec<String> {
    let Some(info) = spec.graph.sym.as_deref() else {
        return Vec::new();
    };
    let mut names = vec![String::new(); info.num_symbols()];
    let mut n_arg = 0usize;
    for (slot, id) in spec.graph.inputs.iter().enumerate() {
        let arg = matches!(
            spec.graph.node(*id).map(|n| &n.op),
            Some(IrOp::Input {
                kind: InputKind::Arg(_),
                ..
            })
        );
        if !arg {
            continue;
        }
        let axes = spec.input_axes.get(n_arg);
        n_arg += 1;
        let dims = info.inputs.get(slot).into_iter().flatten().enumerate();
        for (d, s) in dims {
            let given = axes.and_then(|a| a.get(d)).cloned().flatten();
            let slot = s.and_then(|s| names.get_mut(s as usize));
            if let (Some(n), Some(given)) = (slot, given) {
                if n.is_empty() {
                    *n = given;
                }
            }
        }
    }
    names
}

/// `names[i]`, or an error when too few names were given.
fn pick(names: &[String], i: usize, what: &str) -> Result<String> {
    names
        .get(i)
        .cloned()
        .ok_or_else(|| value_err(format!("export_onnx: no name for {what} {i}")))
}

/// Identity nodes from each output's value to its public name.
fn outputs(lw: &mut Lower, spec: &ExportSpec) -> Result<Vec<ValueInfoProto>> {
    let g = spec.graph;
    let mut out = Vec::new();
    lw.b.doc = String::new();
    for (k, id) in g.outputs.iter().enumerate() {
        let name = pick(spec.output_names, k, "output")?;
        let node = g
            .node(*id)
            .ok_or_else(|| unsupported("a dangling output", "<graph>"))?;
        let src = lw.vals.get(id.index()).cloned().unwrap_or_default();
        lw.b.op_to("Identity", &[&src], vec![], name.clone());
        let axes = spec.output_axes.get(k);
        out.push(named_value_info(&name, node.dtype, &node.shape, axes));
    }
    Ok(out)
}

/// Interface names must be distinct and non-empty.
fn check_names(spec: &ExportSpec) -> Result<()> {
    let mut seen = HashSet::new();
    let all = spec
        .input_names
        .iter()
        .chain(spec.param_names)
        .chain(spec.output_names);
    for n in all {
        if n.is_empty() || !seen.insert(n.as_str()) {
            return Err(value_err(format!(
                "export_onnx: input/output/parameter names must be distinct and non-empty (got {n:?} twice or empty)"
            )));
        }
    }
    Ok(())
}

/// The model's protobuf bytes.
pub fn encode(m: &ModelProto) -> Vec<u8> {
    m.encode_to_vec()
}

/// Decodes a model (for tools and tests that read exported files back: `internals`).
#[cfg(feature = "internals")]
pub fn decode(bytes: &[u8]) -> Result<ModelProto> {
    ModelProto::decode(bytes).map_err(|e| value_err(format!("not an ONNX model: {e}")))
}

/// Writes the encoded model to `path` atomically (temporary file + rename).
pub fn save(m: &ModelProto, path: &Path) -> Result<()> {
    crate::io::write_atomic(path, &encode(m))
}
