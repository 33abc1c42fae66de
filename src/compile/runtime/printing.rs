//! Text of `print` inside compiled code: a `Print` node's pieces with its tensor holes
//! formatted at run time exactly as eager formats them (`str(t)`, `{t!r}`, and PyTorch's
//! `Tensor.__format__` for f-string holes).

use crate::compile::ir::control::PrintPiece;
use crate::compile::ir::{IrOp, Node};
use crate::error::{Error, ErrorKind, Result};
use crate::pyfmt::{format_value, FmtArg};
use crate::tensor::dtype::Scalar;
use crate::tensor::format::{format_tensor_as, grad_suffix};
use crate::tensor::Tensor;

/// `t` printed (`spec` None: `print(t)`, which is `str(t)`) or in an f-string hole
/// `{t!conv:spec}` (`spec` Some, maybe empty). Without a conversion that is PyTorch's
/// `Tensor.__format__`: a 0-d tensor formats its value (`f"{loss:.4f}"`, and `f"{t}"` is
/// `str(t.item())`), any other tensor is `str(t)` under an empty spec and otherwise
/// `object.__format__`'s TypeError (a parameter is a subclass: always the latter).
pub fn tensor_text(t: &Tensor, conv: Option<char>, spec: Option<&str>) -> Result<String> {
    tensor_text_as(t, conv, spec, grad_suffix(t).as_deref())
}

/// `tensor_text` with autograd suffix `grad` in place of `t`'s own (a `Print` node's
/// hole: see `PrintPiece::Tensor`).
pub fn tensor_text_as(
    t: &Tensor,
    conv: Option<char>,
    spec: Option<&str>,
    grad: Option<&str>,
) -> Result<String> {
    let format_tensor = |t: &Tensor| format_tensor_as(t, grad);
    let Some(spec) = spec else {
        return Ok(format_tensor(t));
    };
    if conv.is_some() {
        return format_value(FmtArg::Str(&format_tensor(t)), spec);
    }
    if t.ndim() == 0 && !t.is_parameter() {
        let arg = match t.item()? {
            Scalar::Bool(b) => FmtArg::Bool(b),
            Scalar::Int(i) => FmtArg::Int(i),
            Scalar::Float(f) => FmtArg::Float(f),
        };
        return format_value(arg, spec);
    }
    if spec.is_empty() {
        return Ok(format_tensor(t));
    }
    let class = if t.is_parameter() {
        "Parameter"
    } else {
        "Tensor"
    };
    Err(Error::new(
        ErrorKind::TypeError,
        format!("unsupported format string passed to {class}.__format__"),
        None,
    ))
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
            PrintPiece::Tensor {
                arg,
                conv,
                spec,
                grad,
            } => {
                let t = args.get(*arg).ok_or_else(|| {
                    Error::new(
                        ErrorKind::RuntimeError,
                        "internal compile error: a print hole without its tensor",
                        None,
                    )
                })?;
                out.push_str(&tensor_text_as(t, *conv, spec.as_deref(), grad.as_deref())?);
            }
        }
    }
    Ok(out)
}
