//! The fused LSTM/GRU layer recurrences (`_lstm_layer`, `_gru_layer`, used by
//! `nn.LSTM`/`nn.GRU`): one autograd node each over the kernels in `kernels::recurrent`.
//! A `@compile` capture records the forward as `IrOp::LstmLayer` / `IrOp::GruLayer`
//! and, when its backward runs in the capture, one `GradKernel::LstmLayer` /
//! `GradKernel::GruLayer` node per input gradient (the node then saves xp, and b_hh, for
//! them; eager nodes do not). At run time the forward keeps its gate values (the ones the
//! eager node saves) for the backward, and the first gradient part to run computes all of
//! them with one backward kernel run and keeps the others (`parts_memo`); without kept
//! gate values the forward is run again.

use super::dtype::with_float;
use super::kernels::recurrent;
use super::parts_memo::{self, Whole};
use super::seq::shape_str;
use super::{err, DType, Elem, Tensor};
use crate::autograd::{self, BackwardOp, Saved};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::{GradKernel, IrOp};

/// The memo keys of the gate values a captured forward keeps (by its output).
const LSTM_ACTS: Whole = Whole::Forward("_lstm_layer");
const GRU_SAVED: Whole = Whole::Forward("_gru_layer");

/// What a captured layer's backward records its gradient kernels over besides the
/// tensors the eager node saves: the input projection and GRU's b_hh.
pub struct RnnIr {
    pub xp: Saved,
    pub bias: Option<Saved>,
}

fn rt(msg: String) -> crate::error::Error {
    err(ErrorKind::RuntimeError, msg)
}

/// Checks `t` is float32 or float64 (the dtype of the input projection, `dt`) and of
/// `shape`.
fn expect(t: &Tensor, shape: &[usize], dt: DType, what: &str, op: &str) -> Result<()> {
    if !matches!(t.dtype(), DType::F32 | DType::F64) || t.dtype() != dt {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "{op}: {what} must be float32 or float64 like the input, got {} (input {})",
                t.dtype().name(),
                dt.name()
            ),
        ));
    }
    if t.shape() != shape {
        return Err(rt(format!(
            "{op}: expected {what} of size {}, got {}",
            shape_str(shape),
            shape_str(t.shape())
        )));
    }
    Ok(())
}

/// `[T, B, G*H]` of the input projection: (T, B, H).
fn seq_dims(xp: &Tensor, w: &Tensor, gates: usize, op: &str) -> Result<(usize, usize, usize)> {
    let (ws, xs) = (w.shape(), xp.shape());
    if ws.len() != 2 || ws[1] == 0 || ws[0] != gates * ws[1] || xs.len() != 3 || xs[2] != ws[0] {
        return Err(rt(format!(
            "{op}: expected input projection [T, B, {gates}*H] and weight_hh [{gates}*H, H], got {} and {}",
            shape_str(xs),
            shape_str(ws)
        )));
    }
    Ok((xs[0], xs[1], ws[1]))
}

/// `f` on the elements of three tensors of dtype `T` (each borrowed when contiguous,
/// gathered otherwise: `Tensor::read`).
fn read3<T: Elem, R>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: impl FnOnce(&[T], &[T], &[T]) -> R,
) -> Result<R> {
    a.read(|a: &[T]| b.read(|b: &[T]| c.read(|c: &[T]| f(a, b, c))))??
}

fn arg<'a>(args: &[&'a Tensor], i: usize, op: &str) -> Result<&'a Tensor> {
    args.get(i)
        .copied()
        .ok_or_else(|| rt(format!("internal error: {op} without arg {i}")))
}

/// The checked sizes (T, B, H) of an LSTM layer's operands.
fn lstm_checked(xp: &Tensor, h0: &Tensor, c0: &Tensor, w: &Tensor) -> Result<[usize; 3]> {
    let op = "_lstm_layer";
    let (t, b, h) = seq_dims(xp, w, 4, op)?;
    let dt = xp.dtype();
    expect(xp, &[t, b, 4 * h], dt, "input projection", op)?;
    expect(h0, &[b, h], dt, "h0", op)?;
    expect(c0, &[b, h], dt, "c0", op)?;
    expect(w, &[4 * h, h], dt, "weight_hh", op)?;
    Ok([t, b, h])
}

/// The LSTM recurrence of checked operands: the rows `[T, B, 2H]` and the gate
/// activations `[T, B, 4H]`.
fn lstm_run(xp: &Tensor, h0: &Tensor, c0: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
    let [t, b, h] = lstm_checked(xp, h0, c0, w)?;
    Ok(with_float!(xp.dtype(), T => {
        let (h0v, c0v) = (h0.to_vec()?, c0.to_vec()?);
        let (out, acts) = xp.read(|x: &[T]| {
            w.read(|w: &[T]| recurrent::lstm_forward::<T>(x, &h0v, &c0v, w, t, b, h))?
        })??;
        (
            Tensor::from_vec(out, &[t, b, 2 * h]),
            Tensor::from_vec(acts, &[t, b, 4 * h]),
        )
    }))
}

/// One LSTM layer direction: `xp` = x W_ih^T + b_ih + b_hh `[T, B, 4H]`, initial
/// `h0`, `c0` `[B, H]`, `w` = W_hh `[4H, H]`; returns `[T, B, 2H]` (each step's h, c).
pub fn lstm_layer(xp: &Tensor, h0: &Tensor, c0: &Tensor, w: &Tensor) -> Result<Tensor> {
    lstm_checked(xp, h0, c0, w)?;
    let inputs = [xp, h0, c0, w];
    let eager = |ir: Option<RnnIr>| -> Result<Tensor> {
        let (out, acts) = lstm_run(xp, h0, c0, w)?;
        if autograd::needs_grad(&inputs) {
            let node = BackwardOp::LstmLayer {
                h0: Saved::new(h0),
                c0: Saved::new(c0),
                w: Saved::new(w),
                out: Saved::new(&out),
                acts,
                ir,
            };
            autograd::record(&out, node, &inputs);
        }
        Ok(out)
    };
    if !trace::active() {
        return eager(None);
    }
    let ir = RnnIr {
        xp: Saved::new(xp),
        bias: None,
    };
    record_op(&inputs, |_| IrOp::LstmLayer, || eager(Some(ir)))
}

/// dxp, dh0, dc0, dW_hh of an LSTM layer from its rows and gate activations.
fn lstm_raw_grads(
    g: &Tensor,
    h0: &Tensor,
    c0: &Tensor,
    w: &Tensor,
    out: &Tensor,
    acts: &Tensor,
) -> Result<Vec<Tensor>> {
    let (t, b, h) = (out.shape()[0], out.shape()[1], w.shape()[1]);
    let g = g.cast(out.dtype())?;
    Ok(with_float!(out.dtype(), T => {
        let (h0v, c0v) = (h0.to_vec()?, c0.to_vec()?);
        let [dxp, dh, dc, dw] = read3(&g, out, acts, |gy: &[T], o: &[T], a: &[T]| {
            w.read(|w: &[T]| recurrent::lstm_backward::<T>(gy, o, a, &h0v, &c0v, w, t, b, h))?
        })??;
        vec![
            Tensor::from_vec(dxp, &[t, b, 4 * h]),
            Tensor::from_vec(dh, &[b, h]),
            Tensor::from_vec(dc, &[b, h]),
            Tensor::from_vec(dw, &[4 * h, h]),
        ]
    }))
}

/// Records each of a captured layer's gradients as `kernel(part)` over `args`.
fn record_parts(grads: &[Tensor], args: &[&Tensor], kernel: impl Fn(usize) -> GradKernel) {
    for (part, t) in grads.iter().enumerate() {
        trace::record_after(|| IrOp::GradKernel(kernel(part)), args, t);
    }
}

/// `_lstm_layer`'s gradients (xp, h0, c0, W_hh) for the rule table; in a capture whose
/// forward was recorded (`ir`), each is recorded as a `GradKernel::LstmLayer` node.
pub fn lstm_layer_grads(
    g: &Tensor,
    h0: &Tensor,
    c0: &Tensor,
    w: &Tensor,
    out: &Tensor,
    acts: &Tensor,
    ir: Option<&RnnIr>,
) -> Result<Vec<Option<Tensor>>> {
    let grads = trace::paused(|| lstm_raw_grads(g, h0, c0, w, out, acts))?;
    if let (Some(ir), true) = (ir, trace::active()) {
        let xp = ir.xp.get()?;
        let args = [&xp, h0, c0, w, out, g];
        record_parts(&grads, &args, |part| GradKernel::LstmLayer { part });
    }
    Ok(grads.into_iter().map(Some).collect())
}

/// The checked sizes (T, B, H) of a GRU layer's operands.
fn gru_checked(xp: &Tensor, h0: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<[usize; 3]> {
    let op = "_gru_layer";
    let (t, b, h) = seq_dims(xp, w, 3, op)?;
    let dt = xp.dtype();
    expect(xp, &[t, b, 3 * h], dt, "input projection", op)?;
    expect(h0, &[b, h], dt, "h0", op)?;
    expect(w, &[3 * h, h], dt, "weight_hh", op)?;
    if let Some(bias) = bias {
        expect(bias, &[3 * h], dt, "bias_hh", op)?;
    }
    Ok([t, b, h])
}

/// The GRU recurrence of checked operands: the hidden states `[T, B, H]` and the
/// values its backward reads `[T, B, 4H]`.
fn gru_run(
    xp: &Tensor,
    h0: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
) -> Result<(Tensor, Tensor)> {
    let [t, b, h] = gru_checked(xp, h0, w, bias)?;
    Ok(with_float!(xp.dtype(), T => {
        let bv: Vec<T> = match bias {
            Some(t) => t.to_vec()?,
            None => Vec::new(),
        };
        let h0v = h0.to_vec()?;
        let (out, saved) = xp.read(|x: &[T]| {
            w.read(|w: &[T]| recurrent::gru_forward::<T>(x, &h0v, w, &bv, t, b, h))?
        })??;
        (
            Tensor::from_vec(out, &[t, b, h]),
            Tensor::from_vec(saved, &[t, b, 4 * h]),
        )
    }))
}

/// One GRU layer direction: `xp` = x W_ih^T + b_ih `[T, B, 3H]`, `h0` `[B, H]`, `w` =
/// W_hh `[3H, H]`, `bias` = b_hh `[3H]` or none; returns the hidden states `[T, B, H]`.
pub fn gru_layer(xp: &Tensor, h0: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    gru_checked(xp, h0, w, bias)?;
    let mut inputs = vec![xp, h0, w];
    inputs.extend(bias);
    let eager = |ir: Option<RnnIr>| -> Result<Tensor> {
        let (out, saved) = gru_run(xp, h0, w, bias)?;
        if autograd::needs_grad(&inputs) {
            let node = BackwardOp::GruLayer {
                h0: Saved::new(h0),
                w: Saved::new(w),
                out: Saved::new(&out),
                saved,
                bias: bias.is_some(),
                ir,
            };
            autograd::record(&out, node, &inputs);
        }
        Ok(out)
    };
    if !trace::active() {
        return eager(None);
    }
    let ir = RnnIr {
        xp: Saved::new(xp),
        bias: bias.map(Saved::new),
    };
    let op = IrOp::GruLayer {
        bias: bias.is_some(),
    };
    record_op(&inputs, |_| op, || eager(Some(ir)))
}

/// dxp, dh0, dW_hh (and db_hh when `bias`) of a GRU layer from its hidden states and
/// saved values.
fn gru_raw_grads(
    g: &Tensor,
    h0: &Tensor,
    w: &Tensor,
    out: &Tensor,
    saved: &Tensor,
    bias: bool,
) -> Result<Vec<Tensor>> {
    let (t, b, h) = (out.shape()[0], out.shape()[1], w.shape()[1]);
    let g = g.cast(out.dtype())?;
    Ok(with_float!(out.dtype(), T => {
        let h0v = h0.to_vec()?;
        let [dxp, dh, dw, db] = read3(&g, out, saved, |gy: &[T], o: &[T], sv: &[T]| {
            w.read(|w: &[T]| recurrent::gru_backward::<T>(gy, o, sv, &h0v, w, t, b, h))?
        })??;
        let mut grads = vec![
            Tensor::from_vec(dxp, &[t, b, 3 * h]),
            Tensor::from_vec(dh, &[b, h]),
            Tensor::from_vec(dw, &[3 * h, h]),
        ];
        if bias {
            grads.push(Tensor::from_vec(db, &[3 * h]));
        }
        grads
    }))
}

/// `_gru_layer`'s gradients (xp, h0, W_hh, b_hh when given) for the rule table; in a
/// capture whose forward was recorded (`ir`), each is recorded as a
/// `GradKernel::GruLayer` node.
pub fn gru_layer_grads(
    g: &Tensor,
    h0: &Tensor,
    w: &Tensor,
    (out, saved): (&Tensor, &Tensor),
    bias: bool,
    ir: Option<&RnnIr>,
) -> Result<Vec<Option<Tensor>>> {
    let grads = trace::paused(|| gru_raw_grads(g, h0, w, out, saved, bias))?;
    if let (Some(ir), true) = (ir, trace::active()) {
        let xp = ir.xp.get()?;
        let b = ir.bias.as_ref().map(Saved::get).transpose()?;
        let mut args = vec![&xp, h0, w];
        args.extend(b.as_ref());
        args.extend([out, g]);
        record_parts(&grads, &args, |part| GradKernel::GruLayer { part, bias });
    }
    Ok(grads.into_iter().map(Some).collect())
}

/// Runs a captured `IrOp::LstmLayer` (args xp, h0, c0, W_hh), keeping the gate
/// activations for its backward.
pub fn exec_lstm(args: &[Tensor]) -> Result<Tensor> {
    let a: Vec<&Tensor> = args.iter().collect();
    let op = "_lstm_layer";
    let (xp, h0) = (arg(&a, 0, op)?, arg(&a, 1, op)?);
    let (out, acts) = lstm_run(xp, h0, arg(&a, 2, op)?, arg(&a, 3, op)?)?;
    parts_memo::keep(LSTM_ACTS, &[&out], vec![acts]);
    Ok(out)
}

/// Runs a captured `IrOp::GruLayer` (args xp, h0, W_hh, b_hh when `bias`), keeping
/// the values its backward reads.
pub fn exec_gru(args: &[Tensor], bias: bool) -> Result<Tensor> {
    let a: Vec<&Tensor> = args.iter().collect();
    let op = "_gru_layer";
    let b = if bias { Some(arg(&a, 3, op)?) } else { None };
    let (out, saved) = gru_run(arg(&a, 0, op)?, arg(&a, 1, op)?, arg(&a, 2, op)?, b)?;
    parts_memo::keep(GRU_SAVED, &[&out], vec![saved]);
    Ok(out)
}

/// Gradient part of `kernel` (a `GradKernel::LstmLayer` or `GruLayer`) from `args`:
/// kept from the run that computed them all, else computed from the gate values the
/// forward kept (or from the forward run again).
pub fn grad_part(kernel: &GradKernel, args: &[&Tensor]) -> Result<Tensor> {
    match *kernel {
        GradKernel::LstmLayer { part } => {
            let whole = Whole::Grad(GradKernel::LstmLayer { part: 0 });
            parts_memo::part_of(whole, part, args, || {
                let op = "_lstm_layer backward";
                let [xp, h0, c0, w, out, g] = [0, 1, 2, 3, 4, 5].map(|i| arg(args, i, op));
                let (xp, h0, c0, w, out, g) = (xp?, h0?, c0?, w?, out?, g?);
                let acts = match parts_memo::take(&LSTM_ACTS, 0, &[out]) {
                    Some(acts) => acts,
                    None => lstm_run(xp, h0, c0, w)?.1,
                };
                lstm_raw_grads(g, h0, c0, w, out, &acts)
            })
        }
        GradKernel::GruLayer { part, bias } => {
            let whole = Whole::Grad(GradKernel::GruLayer { part: 0, bias });
            parts_memo::part_of(whole, part, args, || {
                let op = "_gru_layer backward";
                let n = 3 + usize::from(bias);
                let (xp, h0, w) = (arg(args, 0, op)?, arg(args, 1, op)?, arg(args, 2, op)?);
                let b = if bias { Some(arg(args, 3, op)?) } else { None };
                let (out, g) = (arg(args, n, op)?, arg(args, n + 1, op)?);
                let saved = match parts_memo::take(&GRU_SAVED, 0, &[out]) {
                    Some(saved) => saved,
                    None => gru_run(xp, h0, w, b)?.1,
                };
                gru_raw_grads(g, h0, w, out, &saved, bias)
            })
        }
        _ => Err(rt(format!(
            "internal error: {} is not a recurrence's",
            kernel.name()
        ))),
    }
}
