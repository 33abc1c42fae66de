//! Capture of `print`: a `Print` node whose pieces are the literal text and one hole per
//! tensor, formatted at every call from the runtime values. f-strings with tensor holes
//! evaluated during a capture register their pieces (a *template*) with the tracer, so
//! `print(f"loss {loss:.4f}")` prints the current loss; a template string used in any
//! other way than being printed makes the function run eagerly.

use crate::compile::capture::trace::{self, BreakReason};
use crate::compile::ir::control::{PrintPiece, PrintSpec};
use crate::compile::ir::{IrOp, Node};
use crate::compile::runtime::printing::tensor_text;
use crate::interp::repr::fmt_err;
use crate::interp::tree::FPart;
use crate::interp::value::Value;
use crate::interp::{at, Interp, R};
use crate::tensor::dtype::DType;
use crate::tensor::Tensor;
use std::rc::Rc;

/// Pieces under construction: literal text is merged into the last `Text` piece.
#[derive(Default)]
struct Pieces {
    pieces: Vec<PrintPiece>,
    tensors: Vec<Tensor>,
}

impl Pieces {
    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some(PrintPiece::Text(t)) => t.push_str(s),
            _ => self.pieces.push(PrintPiece::Text(s.to_string())),
        }
    }

    fn hole(&mut self, t: &Tensor, conv: Option<char>, spec: Option<String>) {
        self.pieces.push(PrintPiece::Tensor {
            arg: self.tensors.len(),
            conv,
            spec,
            grad: crate::tensor::format::grad_suffix(t),
        });
        self.tensors.push(t.clone());
    }

    /// Appends another piece list whose holes refer to `tensors`.
    fn extend(&mut self, pieces: &[PrintPiece], tensors: &[Tensor]) {
        for p in pieces {
            match p {
                PrintPiece::Text(t) => self.text(t),
                PrintPiece::Tensor {
                    arg, conv, spec, ..
                } => {
                    if let Some(t) = tensors.get(*arg) {
                        self.hole(t, *conv, spec.clone());
                    }
                }
            }
        }
    }
}

impl Interp {
    /// An f-string during a capture: its text, plus a template when it has tensor holes.
    pub(crate) fn fstring_traced(&mut self, parts: &[FPart]) -> R<Value> {
        let mut text = String::new();
        let mut pieces = Pieces::default();
        for p in parts {
            match p {
                FPart::Lit(t) => {
                    text.push_str(t);
                    pieces.text(t);
                }
                FPart::Expr { expr, conv, spec } => {
                    let v = self.eval(expr)?;
                    let spec = self.fstring(spec)?;
                    let Value::Tensor(t) = &v else {
                        let s = self
                            .fstring_hole(&v, *conv, &spec)
                            .map_err(|x| at(x, expr.span))?;
                        text.push_str(&s);
                        pieces.text(&s);
                        continue;
                    };
                    let s = trace::paused(|| tensor_text(t, *conv, Some(&spec)))
                        .map_err(|e| at(fmt_err(e), expr.span))?;
                    text.push_str(&s);
                    pieces.hole(t, *conv, Some(spec));
                }
            }
        }
        let s: Rc<str> = text.into();
        if !pieces.tensors.is_empty() {
            trace::with_tracer(|t| t.templates.push((s.clone(), pieces.pieces, pieces.tensors)));
        }
        Ok(Value::Str(s))
    }

    /// One non-tensor f-string hole, as eager formats it.
    fn fstring_hole(&mut self, v: &Value, conv: Option<char>, spec: &str) -> R<String> {
        let v = match conv {
            Some('r') | Some('a') => Value::str(&self.repr(v)?),
            Some(_) => Value::str(&self.str_of(v)?),
            None => v.clone(),
        };
        self.format_spec(&v, spec)
    }

    /// `print(*args, sep=sep, end=end)` during a capture: writes eager's text now and
    /// records a `Print` node that writes the same text from the values of each call.
    pub(crate) fn print_traced(&mut self, args: &[Value], sep: &str, end: &str) -> R<Value> {
        let mut text = String::new();
        let mut pieces = Pieces::default();
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                text.push_str(sep);
                pieces.text(sep);
            }
            match a {
                Value::Tensor(t) => {
                    let s = trace::paused(|| crate::tensor::format::format_tensor(t));
                    text.push_str(&s);
                    pieces.hole(t, None, None);
                }
                Value::Str(s) => {
                    text.push_str(s);
                    match take_template(s) {
                        Some((p, ts)) => pieces.extend(&p, &ts),
                        None => pieces.text(s),
                    }
                }
                _ => {
                    let s = self.str_of(a)?;
                    text.push_str(&s);
                    pieces.text(&s);
                }
            }
        }
        text.push_str(end);
        pieces.text(end);
        self.write(&text);
        record_print(pieces);
        Ok(Value::None)
    }
}

/// The template of string `s` (consumed: a printed template is not checked again).
fn take_template(s: &Rc<str>) -> Option<(Vec<PrintPiece>, Vec<Tensor>)> {
    trace::with_tracer(|t| {
        let k = t.templates.iter().position(|(x, _, _)| Rc::ptr_eq(x, s))?;
        let (_, p, ts) = t.templates.swap_remove(k);
        Some((p, ts))
    })
    .flatten()
}

fn record_print(p: Pieces) {
    if !trace::active() {
        return;
    }
    let ok = trace::with_tracer(|t| {
        let args: Option<Vec<_>> = p.tensors.iter().map(|x| t.node_of(x)).collect();
        let args = args?;
        let span = t.span();
        t.push(Node {
            op: IrOp::Print(Box::new(PrintSpec { pieces: p.pieces })),
            args,
            dtype: DType::Bool,
            shape: Default::default(),
            span,
        });
        Some(())
    });
    if ok.flatten().is_none() {
        trace::graph_break(BreakReason::UntracedTensor);
    }
}

/// Templates left unprinted at the end of a capture: their text was used otherwise.
pub fn unprinted_templates(t: &trace::Tracer) -> bool {
    !t.templates.is_empty()
}
