//! Sequence-model globals: `scaled_dot_product_attention` (PyTorch's
//! `F.scaled_dot_product_attention`) and the fused recurrences `_lstm_layer` /
//! `_gru_layer` that `nn.LSTM` / `nn.GRU` run (see `tensor::seq`, `tensor::recurrence`).

use super::tensor::{te, tensor_of, Args, Kw};
use crate::interp::value::{NativeImpl, Value};
use crate::interp::{Interp, R};
use crate::tensor::recurrence;
use crate::tensor::seq::{self, AttnOptions};

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("scaled_dot_product_attention", sdpa),
    ("_lstm_layer", lstm_layer),
    ("_gru_layer", gru_layer),
];

fn sdpa(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("scaled_dot_product_attention", args, kw);
    a.check(
        7,
        &[
            "query",
            "key",
            "value",
            "attn_mask",
            "dropout_p",
            "is_causal",
            "scale",
        ],
    )?;
    let (q, k, v) = (
        a.tensor(0, "query")?,
        a.tensor(1, "key")?,
        a.tensor(2, "value")?,
    );
    let mask = a
        .get(3, "attn_mask")
        .map(|m| tensor_of(m, a.fname))
        .transpose()?;
    let o = AttnOptions {
        mask: mask.as_ref(),
        dropout_p: a.float(4, "dropout_p")?.unwrap_or(0.0),
        is_causal: a.flag(5, "is_causal", false)?,
        scale: a.float(6, "scale")?,
    };
    seq::scaled_dot_product_attention(&q, &k, &v, &o)
        .map(Value::Tensor)
        .map_err(te)
}

fn lstm_layer(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_lstm_layer", args, kw);
    a.check(4, &["input", "h0", "c0", "weight_hh"])?;
    let (x, h0) = (a.tensor(0, "input")?, a.tensor(1, "h0")?);
    let (c0, w) = (a.tensor(2, "c0")?, a.tensor(3, "weight_hh")?);
    recurrence::lstm_layer(&x, &h0, &c0, &w)
        .map(Value::Tensor)
        .map_err(te)
}

fn gru_layer(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_gru_layer", args, kw);
    a.check(4, &["input", "h0", "weight_hh", "bias_hh"])?;
    let (x, h0, w) = (
        a.tensor(0, "input")?,
        a.tensor(1, "h0")?,
        a.tensor(2, "weight_hh")?,
    );
    let b = a
        .get(3, "bias_hh")
        .map(|v| tensor_of(v, a.fname))
        .transpose()?;
    recurrence::gru_layer(&x, &h0, &w, b.as_ref())
        .map(Value::Tensor)
        .map_err(te)
}
