//! The op entry points: the primitive elementwise ops (tensor/pointwise.rs, re-exported
//! here with the op table's enums and the capture wrappers) and PyTorch's composite
//! functions over the primitives (more.rs, shape_more.rs, einsum.rs).

pub mod einsum;
pub mod more;
pub mod shape_more;

pub use crate::optable::{BinaryOp, UnaryOp};
pub use crate::tensor::pointwise::{binary, binary_scalar, clamp, clone, to_dtype, unary, where_};
