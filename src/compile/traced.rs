//! `trace()`'s static graph: one captured, optimized version of a function taken out of
//! its `@compile` cache, with its parameter handles and interface metadata (names,
//! dtypes, shapes). Calling it replays the compiled graph on arguments of the traced
//! shapes; `to_onnx` exports it.

use super::cache::{GraphEntry, KeyPart};
use super::exec;
use crate::error::{Error, ErrorKind, Result};
use crate::interp::value::Value;
use crate::onnx::{self, proto::ModelProto, ExportSpec};
use crate::source::SourceMap;
use crate::tensor::dtype::DType;
use crate::tensor::shape::{fmt_shape, Dims};
use crate::tensor::Tensor;
use std::rc::Rc;

/// A graph input or output: its name, dtype and static shape.
#[derive(Debug, Clone)]
pub struct IoInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Dims,
}

/// A `Graph` value.
pub struct TracedGraph {
    pub name: Rc<str>,
    pub entry: GraphEntry,
    /// The guard key of the traced call (argument structure, shapes, scalars).
    pub key: Vec<KeyPart>,
    pub inputs: Vec<IoInfo>,
    pub outputs: Vec<IoInfo>,
    /// Initializer names of the parameters (one per external input).
    pub params: Vec<String>,
}

impl std::fmt::Debug for TracedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<Graph {}>", self.name)
    }
}

fn value_err(msg: String) -> Error {
    Error::new(ErrorKind::ValueError, msg, None)
}

/// True when a call's key part matches the traced one (requires_grad and grad mode
/// do not matter: a graph call never records autograd).
fn part_matches(traced: &KeyPart, now: &KeyPart) -> bool {
    match (traced, now) {
        (
            KeyPart::Tensor {
                dtype: d1,
                shape: s1,
                alias: a1,
                ..
            },
            KeyPart::Tensor {
                dtype: d2,
                shape: s2,
                alias: a2,
                ..
            },
        ) => d1 == d2 && s1 == s2 && a1 == a2,
        (KeyPart::GradMode(_), KeyPart::GradMode(_)) => true,
        (a, b) => a == b,
    }
}

impl TracedGraph {
    /// `repr(g)`: the name and interface in one line.
    pub fn summary(&self) -> String {
        let io = |xs: &[IoInfo]| {
            xs.iter()
                .map(|x| format!("{}: {}{}", x.name, x.dtype.name(), fmt_shape(&x.shape)))
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
        let key = super::cache::CallKey::new(args, &[]);
        let same = key.parts.len() == self.key.len()
            && self
                .key
                .iter()
                .zip(&key.parts)
                .all(|(a, b)| part_matches(a, b));
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
        inputs.extend(self.entry.externals.iter().cloned());
        let outs = self.entry.compiled.run(&inputs, &exec::eval, printed)?;
        Ok(self.entry.output.build(&outs))
    }

    fn describe_inputs(&self) -> String {
        let parts: Vec<String> = self
            .inputs
            .iter()
            .map(|x| format!("{} {}{}", x.name, x.dtype.name(), fmt_shape(&x.shape)))
            .collect();
        format!("({})", parts.join(", "))
    }

    /// The ONNX model of the graph.
    pub fn to_onnx(&self, sources: &SourceMap) -> Result<ModelProto> {
        let input_names: Vec<String> = self.inputs.iter().map(|x| x.name.clone()).collect();
        let output_names: Vec<String> = self.outputs.iter().map(|x| x.name.clone()).collect();
        let spec = ExportSpec {
            name: &self.name,
            graph: &self.entry.compiled.graph,
            externals: &self.entry.externals,
            input_names: &input_names,
            param_names: &self.params,
            output_names: &output_names,
        };
        onnx::export(&spec, sources)
    }
}

fn describe_tensors(ts: &[(Tensor, Vec<super::ir::PathStep>)]) -> String {
    let parts: Vec<String> = ts
        .iter()
        .map(|(t, _)| format!("{}{}", t.dtype().name(), fmt_shape(t.shape())))
        .collect();
    format!("({}) or different non-tensor values", parts.join(", "))
}
