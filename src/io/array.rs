//! `Array`: a neutral n-dimensional row-major array that the file formats read and write.

use super::value_error;
use crate::error::Result;

/// The element type of an [`Array`]: the tensor library's dtype (same names and sizes).
pub use crate::tensor::DType;

/// The elements of an [`Array`], in row-major (C) order.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
}

impl ArrayData {
    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            ArrayData::F32(v) => v.len(),
            ArrayData::F64(v) => v.len(),
            ArrayData::I32(v) => v.len(),
            ArrayData::I64(v) => v.len(),
            ArrayData::U8(v) => v.len(),
            ArrayData::Bool(v) => v.len(),
        }
    }

    /// True when there are no elements.
    #[cfg(feature = "internals")]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            ArrayData::F32(_) => DType::F32,
            ArrayData::F64(_) => DType::F64,
            ArrayData::I32(_) => DType::I32,
            ArrayData::I64(_) => DType::I64,
            ArrayData::U8(_) => DType::U8,
            ArrayData::Bool(_) => DType::Bool,
        }
    }

    /// The elements as little-endian bytes (bool as one byte 0 or 1).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            ArrayData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ArrayData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ArrayData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ArrayData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ArrayData::U8(v) => v.clone(),
            ArrayData::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
        }
    }
}

/// An n-dimensional array: `shape` and row-major `data` with
/// `shape.iter().product() == data.len()` (an invariant the constructors check).
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    shape: Vec<usize>,
    data: ArrayData,
}

/// The number of elements of `shape`, or a `ValueError` if the product overflows `usize`.
pub fn numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| value_error(format!("shape {shape:?} has too many elements")))
}

impl Array {
    /// An array of `shape` holding `data`; a `ValueError` if the sizes disagree.
    pub fn new(shape: Vec<usize>, data: ArrayData) -> Result<Array> {
        let n = numel(&shape)?;
        if n != data.len() {
            return Err(value_error(format!(
                "shape {shape:?} needs {n} elements but {} were given",
                data.len()
            )));
        }
        Ok(Array { shape, data })
    }

    /// A float32 array.
    #[cfg(feature = "internals")]
    pub fn from_f32(shape: Vec<usize>, data: Vec<f32>) -> Result<Array> {
        Array::new(shape, ArrayData::F32(data))
    }

    /// An int64 array.
    #[cfg(feature = "internals")]
    pub fn from_i64(shape: Vec<usize>, data: Vec<i64>) -> Result<Array> {
        Array::new(shape, ArrayData::I64(data))
    }

    /// A bool array.
    #[cfg(feature = "internals")]
    pub fn from_bool(shape: Vec<usize>, data: Vec<bool>) -> Result<Array> {
        Array::new(shape, ArrayData::Bool(data))
    }

    /// The dimensions (empty for a scalar).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements in row-major order.
    pub fn data(&self) -> &ArrayData {
        &self.data
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// Shape and data, consuming the array.
    pub fn into_parts(self) -> (Vec<usize>, ArrayData) {
        (self.shape, self.data)
    }
}
