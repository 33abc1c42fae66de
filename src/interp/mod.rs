//! The tree-walking interpreter.

pub mod builtins;
