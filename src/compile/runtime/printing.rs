//! Text of `print` inside compiled code: a `Print` node's pieces with its tensor holes
//! formatted at run time exactly as eager formats them (`str(t)`, `{t!r}`, and format
//! specs of a 0-d tensor, which format its value like PyTorch's `Tensor.__format__`).

use crate::compile::ir::control::PrintPiece;
use crate::compile::ir::{IrOp, Node};
use crate::error::{Error, ErrorKind, Result};
use crate::interp::builtins::format::{format_value, FmtArg};
use crate::tensor::dtype::Scalar;
use crate::tensor::format::format_tensor;
use crate::tensor::Tensor;

/// `t` in an f-string hole `{t!conv:spec}` (or a plain `print(t)` with neither).
pub fn tensor_text(t: &Tensor, conv: Option<char>, spec: Option<&str>) -> Result<String> {
    let spec = spec.unwrap_or("");
    if conv.is_some() || spec.is_empty() {
        let text = format_tensor(t);
        return if spec.is_empty() {
            Ok(text)
        } else {
            format_value(FmtArg::Str(&text), spec)
        };
    }
    if t.ndim() != 0 {
        return Err(Error::new(
            ErrorKind::TypeError,
            "unsupported format string passed to Tensor.__format__",
            None,
        ));
    }
    let arg = match t.item()? {
        Scalar::Bool(b) => FmtArg::Bool(b),
        Scalar::Int(i) => FmtArg::Int(i),
        Scalar::Float(f) => FmtArg::Float(f),
    };
    format_value(arg, spec)
}

/// The text a `Print` node writes given its args.
pub fn print_node(node: &Node, args: &[Tensor]) -> Result<String> {
    let IrOp::Print(p) = &node.op else {
        return Ok(String::new());
    };
    let mut out = String::new();
    for piece in &p.pieces {
        match piece {
            PrintPiece::Text(t) => out.push_str(t),
            PrintPiece::Tensor { arg, conv, spec } => {
                let t = args.get(*arg).ok_or_else(|| {
                    Error::new(
                        ErrorKind::RuntimeError,
                        "internal compile error: a print hole without its tensor",
                        None,
                    )
                })?;
                out.push_str(&tensor_text(t, *conv, spec.as_deref())?);
            }
        }
    }
    Ok(out)
}
