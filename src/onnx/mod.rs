//! ONNX export of captured graphs: the protobuf messages (`proto`, encoded by prost),
//! the lowering of IR nodes to ONNX nodes (`lower`, `reduce`, `shape`, `nn`, `rnn`) and model
//! assembly + atomic writes (`export`).

mod builder;
mod control;
mod dims;
pub mod export;
mod index;
mod lower;
mod nn;
pub mod proto;
mod reduce;
mod rnn;
mod shape;
mod special;

pub use dims::dim_text;
pub use export::save;
// The protobuf codec, for the export tests (`internals`).
#[cfg(feature = "internals")]
pub use export::{decode, encode, OPSET};
