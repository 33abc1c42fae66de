//! `trace()`'s static graph: one captured, optimized version of a function taken out of
//! its `@compile` cache, with its parameter handles and interface metadata (names,
//! dtypes, shapes, named dynamic axes). Calling it replays the compiled graph on
//! arguments of the traced shapes (any size >= 2 along a dynamic axis); `to_onnx`
//! exports it through `crate::onnx::export`.

use crate::compile::capture::cache::{GraphEntry, KeyPart};
use crate::compile::capture::symguard::SymGuard;
use crate::compile::runtime::exec;
use crate::error::{Error, ErrorKind, Result};
use crate::interp::capture::cache::{build_output, CallKey};
use crate::interp::value::Value;
use crate::onnx::export::{export, ExportSpec};
use crate::onnx::proto::ModelProto;
use crate::source::SourceMap;
use crate::tensor::dtype::DType;
use crate::tensor::shape::{fmt_shape, Dims};
use crate::tensor::Tensor;
use std::rc::Rc;

/// A graph input or output: its name, dtype, traced shape and, per dim, the name of a
/// dynamic axis (None: the traced size is fixed).
#[derive(Debug, Clone)]
pub struct IoInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Dims,
    pub axes: Vec<Option<String>>,
}

impl IoInfo {
    /// `(batch, 3)`: the shape with dynamic axes by name.
    pub fn shape_text(&self) -> String {
        if self.axes.iter().all(Option::is_none) {
            return fmt_shape(&self.shape);
        }
        let dims: Vec<String> = self
            .shape
            .iter()
            .enumerate()
            .map(|(d, n)| match self.axes.get(d).cloned().flatten() {
                Some(name) => name,
                None => n.to_string(),
            })
            .collect();
        format!("({})", dims.join(", "))
    }
}

/// A `Graph` value.
pub struct TracedGraph {
    pub name: Rc<str>,
    pub entry: GraphEntry,
    /// The Python values of its output (`OutTemplate::Const`).
    pub consts: Vec<Value>,
    /// The guard key of the traced call (argument structure, shapes, scalars).
    pub key: Vec<KeyPart>,
    pub inputs: Vec<IoInfo>,
    pub outputs: Vec<IoInfo>,
    /// Initializer names of the parameters (one per external input).
    pub params: Vec<String>,
    /// Set when the graph has dynamic axes: which argument dims may change size.
    pub sym: Option<SymGuard>,
}

impl std::fmt::Debug for TracedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<Graph {}>", self.name)
    }
}

fn value_err(msg: String) -> Error {
    Error::new(ErrorKind::ValueError, msg, None)
}

/// A key without requires_grad flags and grad mode, which do not matter to a graph
/// call (it never records autograd).
fn normalized(parts: &[KeyPart]) -> Vec<KeyPart> {
    parts
        .iter()
        .map(|p| match p {
            KeyPart::Tensor {
                dtype,
                shape,
                contiguous,
                alias,
                ..
            } => KeyPart::Tensor {
                dtype: *dtype,
                shape: shape.clone(),
                requires_grad: false,
                contiguous: *contiguous,
                alias: *alias,
            },
            KeyPart::GradMode(_) => KeyPart::GradMode(false),
            other => other.clone(),
        })
        .collect()
}

impl TracedGraph {
    /// `repr(g)`: the name and interface in one line.
    pub fn summary(&self) -> String {
        let io = |xs: &[IoInfo]| {
            xs.iter()
                .map(|x| format!("{}: {}{}", x.name, x.dtype.name(), x.shape_text()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "<Graph {} ({}) -> ({})>",
            self.name,
            io(&self.inputs),
            io(&self.outputs)
        )
    }

    /// `str(g)`: the summary, then the optimized IR.
    pub fn text(&self, sources: &SourceMap) -> String {
        format!(
            "{}\n{}",
            self.summary(),
            self.entry.compiled.to_text(Some(sources))
        )
    }

    /// Runs the graph on `args` (which must match the traced call's structure, shapes
    /// and non-tensor values); its prints are appended to `printed`.
    pub fn call(&self, args: &[Value], printed: &mut String) -> Result<Value> {
        let key = CallKey::new(args, &[]);
        let (old, new) = (normalized(&self.key), normalized(&key.parts));
        let same = match &self.sym {
            Some(guard) => guard.matches(&old, &new),
            None => old == new,
        };
        if !same {
            return Err(value_err(format!(
                "Graph {} was traced for {}; got arguments {}",
                self.name,
                self.describe_inputs(),
                describe_tensors(&key.tensors)
            )));
        }
        let _ng = crate::autograd::no_grad();
        let mut inputs: Vec<Tensor> = key.tensors.into_iter().map(|(t, _)| t).collect();
        let ext = self
            .entry
            .external_inputs(&inputs)
            .ok_or_else(|| value_err(format!("Graph {}: a .grad it reads is gone", self.name)))?;
        inputs.extend(ext);
        let outs = self.entry.compiled.run(&inputs, &exec::eval, printed)?;
        Ok(build_output(&self.entry.output, &outs, &self.consts))
    }

    /// The ONNX model of the graph.
    pub fn to_onnx(&self, sources: &SourceMap) -> Result<ModelProto> {
        let input_names: Vec<String> = self.inputs.iter().map(|x| x.name.clone()).collect();
        let output_names: Vec<String> = self.outputs.iter().map(|x| x.name.clone()).collect();
        let input_axes: Vec<_> = self.inputs.iter().map(|x| x.axes.clone()).collect();
        let output_axes: Vec<_> = self.outputs.iter().map(|x| x.axes.clone()).collect();
        let spec = ExportSpec {
            name: &self.name,
            graph: &self.entry.compiled.graph,
            externals: &self.entry.externals,
            input_names: &input_names,
            param_names: &self.params,
            output_names: &output_names,
            input_axes: &input_axes,
            output_axes: &output_axes,
        };
        export(&spec, sources)
    }

    fn describe_inputs(&self) -> String {
        let parts: Vec<String> = self
            .inputs
            .iter()
            .map(|x| format!("{} {}{}", x.name, x.dtype.name(), x.shape_text()))
            .collect();
        format!("({})", parts.join(", "))
    }
}

fn describe_tensors(ts: &[(Tensor, Vec<crate::compile::ir::PathStep>)]) -> String {
    let parts: Vec<String> = ts
        .iter()
        .map(|(t, _)| format!("{}{}", t.dtype().name(), fmt_shape(t.shape())))
        .collect();
    format!("({}) or different non-tensor values", parts.join(", "))
}
