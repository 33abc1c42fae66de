//! The op table: every primitive elementwise op declared once ([`unary`] rows, and the
//! [`binary`] ops), with the closed enums generated from it. It sits in the bottom layer
//! (beside `tensor`, `autograd` and `ir`) so that every layer names the same enums and
//! expands the table's columns it needs (docs/ARCHITECTURE.md, "The op table").

pub mod binary;
pub mod unary;

pub use binary::BinaryOp;
pub use unary::{Saves, UnaryOp};
