//! Accumulates the nodes and initializers of an ONNX graph: fresh value names, constant
//! tensors (initializers) and attribute constructors.

use super::proto::{attr_type, data_type, AttributeProto, GraphProto, NodeProto, TensorProto};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::Tensor;

/// The ONNX element type of a Kiln dtype.
pub fn onnx_dtype(d: DType) -> i32 {
    match d {
        DType::F32 => data_type::FLOAT,
        DType::F64 => data_type::DOUBLE,
        DType::I32 => data_type::INT32,
        DType::I64 => data_type::INT64,
        DType::U8 => data_type::UINT8,
        DType::Bool => data_type::BOOL,
    }
}

/// Nodes and initializers under construction.
#[derive(Default)]
pub struct Builder {
    pub nodes: Vec<NodeProto>,
    pub inits: Vec<TensorProto>,
    counter: usize,
    /// The source location recorded on nodes emitted next (`file.dl:3:5`).
    pub doc: String,
}

impl Builder {
    /// A fresh value name.
    pub fn fresh(&mut self, hint: &str) -> String {
        self.counter += 1;
        format!("{hint}_{}", self.counter)
    }

    /// Emits `op(inputs)` with attributes and returns its (fresh) output name.
    pub fn op(&mut self, op: &str, inputs: &[&str], attrs: Vec<AttributeProto>) -> String {
        let out = self.fresh(op);
        self.op_to(op, inputs, attrs, out.clone());
        out
    }

    /// Emits `op(inputs)` writing the value `out`.
    pub fn op_to(&mut self, op: &str, inputs: &[&str], attrs: Vec<AttributeProto>, out: String) {
        self.op_outs(op, inputs, attrs, vec![out]);
    }

    /// Emits `op(inputs)` writing the values `outs` (an empty input name: omitted).
    pub fn op_outs(
        &mut self,
        op: &str,
        inputs: &[&str],
        attrs: Vec<AttributeProto>,
        outs: Vec<String>,
    ) {
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outs,
            name: format!("n{}", self.nodes.len()),
            op_type: op.to_string(),
            attribute: attrs,
            doc_string: self.doc.clone(),
            domain: String::new(),
        });
    }

    /// Casts `x` from `from` to `to` (no node when they are equal).
    pub fn cast(&mut self, x: &str, from: DType, to: DType) -> String {
        if from == to {
            return x.to_string();
        }
        self.op("Cast", &[x], vec![attr_i("to", i64::from(onnx_dtype(to)))])
    }

    /// An int64 tensor constant of shape `[vals.len()]` (or a 0-d one when `scalar`).
    pub fn const_i64(&mut self, vals: &[i64], scalar: bool) -> String {
        let name = self.fresh("c");
        let dims = if scalar {
            vec![]
        } else {
            vec![vals.len() as i64]
        };
        let raw = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.inits.push(TensorProto {
            dims,
            data_type: data_type::INT64,
            name: name.clone(),
            raw_data: raw,
        });
        name
    }

    /// A 0-d constant of dtype `d` holding `v`.
    pub fn const_scalar(&mut self, v: Scalar, d: DType) -> String {
        let name = self.fresh("c");
        let raw = scalar_bytes(v, d);
        self.inits.push(TensorProto {
            dims: vec![],
            data_type: onnx_dtype(d),
            name: name.clone(),
            raw_data: raw,
        });
        name
    }

    /// An initializer named `name` holding a copy of `t`.
    pub fn init_tensor(&mut self, name: &str, t: &Tensor) -> Result<()> {
        self.inits.push(tensor_proto(name, t)?);
        Ok(())
    }
}

/// Little-endian bytes of a scalar converted to dtype `d`.
fn scalar_bytes(v: Scalar, d: DType) -> Vec<u8> {
    let (f, i, b) = match v {
        Scalar::Bool(b) => (f64::from(u8::from(b)), i64::from(b), b),
        Scalar::Int(i) => (i as f64, i, i != 0),
        Scalar::Float(f) => (f, f as i64, f != 0.0),
    };
    match d {
        DType::F32 => (f as f32).to_le_bytes().to_vec(),
        DType::F64 => f.to_le_bytes().to_vec(),
        DType::I32 => (i as i32).to_le_bytes().to_vec(),
        DType::I64 => i.to_le_bytes().to_vec(),
        DType::U8 => vec![i as u8],
        DType::Bool => vec![u8::from(b)],
    }
}

/// A TensorProto copy of `t` (row-major little-endian raw data).
pub fn tensor_proto(name: &str, t: &Tensor) -> Result<TensorProto> {
    let raw: Vec<u8> = match t.dtype() {
        DType::F32 => t
            .to_vec::<f32>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F64 => t
            .to_vec::<f64>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I32 => t
            .to_vec::<i32>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I64 => t
            .to_vec::<i64>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::U8 => t.to_vec::<u8>()?,
        DType::Bool => t.to_vec::<bool>()?.iter().map(|v| u8::from(*v)).collect(),
    };
    Ok(TensorProto {
        dims: t.shape().iter().map(|&d| d as i64).collect(),
        data_type: onnx_dtype(t.dtype()),
        name: name.to_string(),
        raw_data: raw,
    })
}

pub fn attr_i(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        r#type: attr_type::INT,
        ..Default::default()
    }
}

pub fn attr_f(name: &str, f: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        f,
        r#type: attr_type::FLOAT,
        ..Default::default()
    }
}

pub fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        s: s.as_bytes().to_vec(),
        r#type: attr_type::STRING,
        ..Default::default()
    }
}

pub fn attr_g(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        g: Some(g),
        r#type: attr_type::GRAPH,
        ..Default::default()
    }
}

pub fn attr_ints(name: &str, ints: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: ints.to_vec(),
        r#type: attr_type::INTS,
        ..Default::default()
    }
}

/// `usize` dims as ONNX int64s.
pub fn dims_i64(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&v| v as i64).collect()
}

/// The error for an IR op with no ONNX equivalent.
pub fn unsupported(what: &str, at: &str) -> Error {
    Error::new(
        ErrorKind::NotImplementedError,
        format!("export_onnx: {what} has no ONNX equivalent (at {at})"),
        None,
    )
}
