//! The fused LSTM/GRU layers (`IrOp::LstmLayer` / `IrOp::GruLayer`, one per layer and
//! direction of `nn.LSTM` / `nn.GRU`) as ONNX `LSTM` / `GRU` nodes.
//!
//! The IR layer takes the input projection `xp = x @ weight_ih.T (+ biases)` as a graph
//! value; ONNX's ops take `x` and the weights. So a layer is lowered when `xp` is that
//! expression over module parameters (what `nn.LSTM`/`nn.GRU` record): X is `x`, and
//! W, R, B are initializers made at export time from the parameters with the gates
//! reordered (PyTorch's LSTM i,f,g,o to ONNX's i,o,f,c; GRU r,z,n to z,r,h, with
//! `linear_before_reset=1`, PyTorch's GRU). `folded` marks the projection's nodes (and
//! the parameters only they read) that the export then leaves out. The layer's other
//! layers, directions, `batch_first` and the final states stay graph ops around it.
//!
//! An LSTM layer's IR value holds each step's h and c (`[T, B, 2H]`); ONNX's LSTM gives
//! every h but only the last c. The value is built as `[Y, Y_c expanded over T]`, which
//! is exact where it is read: the lowering checks that every reader takes only the h
//! half or the last step (nn.LSTM's without a packed sequence), and refuses otherwise.

use super::builder::{attr_i, tensor_proto, unsupported};
use super::lower::Lower;
use super::proto::TensorProto;
use crate::compile::ir::{Graph, InputKind, IrIndex, IrOp, Node, NodeId};
use crate::error::Result;
use crate::ops::BinaryOp;
use crate::tensor::Tensor;
use std::collections::HashMap;

/// The module parameters of a graph (its `External` inputs) by node index: the
/// initializer name and the value.
pub type Params<'g> = HashMap<usize, (String, &'g Tensor)>;

/// nn.LSTM's gate blocks (i, f, g, o) in ONNX's order (i, o, f, c).
const LSTM_ORDER: [usize; 4] = [0, 3, 1, 2];
/// nn.GRU's gate blocks (r, z, n) in ONNX's order (z, r, h).
const GRU_ORDER: [usize; 3] = [1, 0, 2];

/// The parts of a layer's input projection `x @ w_ih.T (+ b)`: `b` is LSTM's
/// `b_ih + b_hh` pair or GRU's `b_ih` (empty without bias).
struct Proj {
    x: NodeId,
    w_ih: NodeId,
    b: Vec<NodeId>,
}

fn is_param(params: &Params, id: NodeId) -> bool {
    params.contains_key(&id.index())
}

fn op_args(g: &Graph, id: NodeId) -> Option<(&IrOp, &[NodeId])> {
    g.node(id).map(|n| (&n.op, n.args.as_slice()))
}

/// `x @ w.T` with `w` a parameter: (x, w).
fn projection(g: &Graph, params: &Params, id: NodeId) -> Option<(NodeId, NodeId)> {
    let (IrOp::Matmul, [x, t]) = op_args(g, id)? else {
        return None;
    };
    let (IrOp::Permute { perm }, [w]) = op_args(g, *t)? else {
        return None;
    };
    (perm.as_slice() == [1, 0] && is_param(params, *w)).then_some((*x, *w))
}

/// The projection of an LSTM (`lstm`: its bias is `b_ih + b_hh`) or GRU layer's `xp`.
fn match_proj(g: &Graph, params: &Params, xp: NodeId, lstm: bool) -> Option<Proj> {
    if let Some((x, w_ih)) = projection(g, params, xp) {
        return Some(Proj { x, w_ih, b: vec![] });
    }
    let (IrOp::Binary(BinaryOp::Add), [m, bias]) = op_args(g, xp)? else {
        return None;
    };
    let (x, w_ih) = projection(g, params, *m)?;
    let b = if lstm {
        let (IrOp::Binary(BinaryOp::Add), [bi, bh]) = op_args(g, *bias)? else {
            return None;
        };
        vec![*bi, *bh]
    } else {
        vec![*bias]
    };
    b.iter()
        .all(|b| is_param(params, *b))
        .then_some(Proj { x, w_ih, b })
}

/// The projection of recurrence node `n` whose weights are all parameters, if any.
fn fused(g: &Graph, params: &Params, n: &Node) -> Option<Proj> {
    let (lstm, rest) = match n.op {
        IrOp::LstmLayer => (true, n.args.get(3..4)?),
        IrOp::GruLayer { bias } => (false, n.args.get(2..3 + usize::from(bias))?),
        _ => return None,
    };
    let p = match_proj(g, params, *n.args.first()?, lstm)?;
    // GRU: b_hh (an arg of the layer) when the projection adds b_ih
    let bias_ok = matches!(
        (lstm, rest.len(), p.b.len()),
        (true, _, _) | (false, 2, 1) | (false, 1, 0)
    );
    (bias_ok && rest.iter().all(|w| is_param(params, *w))).then_some(p)
}

/// Per node of `g`: true when the export leaves it out, because only the input
/// projections of fused recurrences (which the ONNX ops compute from x and the
/// weights) read it.
pub fn folded(g: &Graph, params: &Params) -> Vec<bool> {
    let mut uses = g.use_counts();
    let mut dropped = Vec::new();
    for n in &g.nodes {
        if let Some(p) = fused(g, params, n) {
            // the ONNX op reads x; it reads the weights as initializers, not values
            if let Some(u) = uses.get_mut(p.x.index()) {
                *u += 1;
            }
            dropped.push(n.args[0]);
            let weights = if matches!(n.op, IrOp::LstmLayer) {
                3
            } else {
                2
            };
            dropped.extend(n.args.iter().skip(weights));
        }
    }
    let mut out = vec![false; g.nodes.len()];
    while let Some(id) = dropped.pop() {
        let i = id.index();
        let Some(u) = uses.get_mut(i) else { continue };
        *u = u.saturating_sub(1);
        let removable = g.node(id).is_some_and(|n| match &n.op {
            IrOp::Input { kind, .. } => matches!(kind, InputKind::External { .. }),
            op => !op.is_control(),
        });
        if *u == 0 && removable && !out[i] {
            out[i] = true;
            dropped.extend(g.nodes[i].args.iter().copied());
        }
    }
    out
}

/// A TensorProto of parameter(s) `ts` with their rows' gate blocks in `order`,
/// concatenated (`[W_b, R_b]` for B), shaped `[1, rows, cols...]`.
fn reordered(name: &str, ts: &[&Tensor], order: &[usize]) -> Result<TensorProto> {
    let mut raw = Vec::new();
    let mut rows = 0;
    let mut out = None;
    for t in ts {
        let p = tensor_proto(name, t)?;
        let block = p.raw_data.len() / order.len();
        for &k in order {
            raw.extend_from_slice(&p.raw_data[k * block..(k + 1) * block]);
        }
        rows += t.shape().first().copied().unwrap_or(0) as i64;
        out = Some(p);
    }
    let mut p = out.unwrap_or_default();
    p.dims = [vec![1, rows], p.dims.get(1..).unwrap_or(&[]).to_vec()].concat();
    p.raw_data = raw;
    Ok(p)
}

impl<'g> Lower<'g> {
    /// The parameter (name, value) of node `id`.
    fn param(&self, id: NodeId) -> Result<(String, &'g Tensor)> {
        self.params
            .get(&id.index())
            .cloned()
            .ok_or_else(|| self.bad("a recurrence weight that is not a parameter"))
    }

    /// Initializer `name` from `ts` reordered by `order`; returns its name.
    fn init_reordered(&mut self, name: String, ts: &[&Tensor], order: &[usize]) -> Result<String> {
        self.b.inits.push(reordered(&name, ts, order)?);
        Ok(name)
    }

    /// `x` `[B, H]` as `[1, B, H]` (one direction).
    fn unsqueeze0(&mut self, x: &str) -> String {
        let axes = self.b.const_i64(&[0], false);
        self.b.op("Unsqueeze", &[x, &axes], vec![])
    }

    /// X, W, R and B (or "") of recurrence node `n` (gates `order`), or the refusal.
    fn rnn_inputs(&mut self, n: &'g Node, order: &[usize]) -> Result<[String; 4]> {
        let what = n.op.name();
        let w_hh = match n.op {
            IrOp::LstmLayer => 3,
            _ => 2,
        };
        let Some(p) = fused(self.g, &self.params, n) else {
            let why = format!(
                "{what} over an input other than `x @ weight_ih.T + bias` of module parameters \
                 (nn.LSTM / nn.GRU outside a loop or branch)"
            );
            return Err(unsupported(&why, &self.at));
        };
        let x = self.vals.get(p.x.index()).cloned().unwrap_or_default();
        let (wn, w) = self.param(p.w_ih)?;
        let w = self.init_reordered(format!("{wn}.onnx_W"), &[w], order)?;
        let (rn, r) = self.param(n.args[w_hh])?;
        let r = self.init_reordered(format!("{rn}.onnx_R"), &[r], order)?;
        // B = [Wb, Rb]: LSTM's b_ih, b_hh from the projection; GRU's b_ih from it, b_hh
        // an arg of the layer
        let mut bs: Vec<NodeId> = p.b.clone();
        bs.extend(n.args.get(w_hh + 1).copied());
        let b = match bs.first() {
            None => String::new(),
            Some(first) => {
                let (bn, _) = self.param(*first)?;
                let ts = bs
                    .iter()
                    .map(|id| self.param(*id).map(|(_, t)| t))
                    .collect::<Result<Vec<_>>>()?;
                self.init_reordered(format!("{bn}.onnx_B"), &ts, order)?
            }
        };
        Ok([x, w, r, b])
    }

    /// `IrOp::LstmLayer` (args xp, h0, c0, W_hh) as an ONNX LSTM: the rows `[T, B, 2H]`
    /// as `[Y, Y_c]` (see the module doc), after checking no reader needs another c.
    pub fn lstm_layer(&mut self, n: &'g Node) -> Result<String> {
        let h = n.shape.get(2).copied().unwrap_or(0) / 2;
        if let Some(why) = rows_misread(self.g, self.cur, h) {
            let what = format!(
                "lstm_layer whose cell state is read at a step other than the last ({why})"
            );
            return Err(unsupported(&what, &self.at));
        }
        let [x, w, r, b] = self.rnn_inputs(n, &LSTM_ORDER)?;
        let (h0, c0) = (self.arg(n, 1)?, self.arg(n, 2)?);
        let h0 = self.unsqueeze0(&h0.name);
        let c0 = self.unsqueeze0(&c0.name);
        let outs = vec![
            self.b.fresh("lstm_y"),
            self.b.fresh("lstm_h"),
            self.b.fresh("lstm_c"),
        ];
        let attrs = vec![attr_i("hidden_size", h as i64)];
        let inputs: &[&str] = &[&x, &w, &r, &b, "", &h0, &c0];
        self.b.op_outs("LSTM", inputs, attrs, outs.clone());
        let axes = self.b.const_i64(&[1], false);
        let y = self.b.op("Squeeze", &[&outs[0], &axes], vec![]);
        let shape = self.b.op("Shape", &[&y], vec![]);
        let c = self.b.op("Expand", &[&outs[2], &shape], vec![]);
        Ok(self.b.op("Concat", &[&y, &c], vec![attr_i("axis", 2)]))
    }

    /// `IrOp::GruLayer` (args xp, h0, W_hh, b_hh) as an ONNX GRU with
    /// `linear_before_reset=1`: Y without its direction axis, `[T, B, H]`.
    pub fn gru_layer(&mut self, n: &'g Node) -> Result<String> {
        let h = n.shape.get(2).copied().unwrap_or(0);
        let [x, w, r, b] = self.rnn_inputs(n, &GRU_ORDER)?;
        let h0 = self.arg(n, 1)?;
        let h0 = self.unsqueeze0(&h0.name);
        let outs = vec![self.b.fresh("gru_y"), self.b.fresh("gru_h")];
        let attrs = vec![
            attr_i("hidden_size", h as i64),
            attr_i("linear_before_reset", 1),
        ];
        self.b
            .op_outs("GRU", &[&x, &w, &r, &b, "", &h0], attrs, outs.clone());
        let axes = self.b.const_i64(&[1], false);
        Ok(self.b.op("Squeeze", &[&outs[0], &axes], vec![]))
    }
}

/// Why a reader of LSTM rows `id` (`[T, B, 2H]`) may read a c other than the last
/// step's, if one may: only narrows to the h half and `rows[-1]` are sure not to.
fn rows_misread(g: &Graph, id: NodeId, h: usize) -> Option<String> {
    if g.outputs.contains(&id) {
        return Some("the rows are a graph output".into());
    }
    for n in &g.nodes {
        if !n.args.contains(&id) {
            continue;
        }
        let first_only = n.args.iter().skip(1).all(|a| *a != id);
        let ok = first_only
            && match &n.op {
                IrOp::Narrow { dim: 2, start, len } => start + len <= h,
                IrOp::Index { indices } => matches!(indices.first(), Some(IrIndex::Int(-1))),
                _ => false,
            };
        if !ok {
            return Some(format!("by {}", n.op.name()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::builder::onnx_dtype;
    use crate::tensor::dtype::DType;

    #[test]
    fn gate_blocks_move_to_onnx_order() {
        // rows 0..8 of a [8, 1] weight: 4 gates of H = 2
        let t = Tensor::from_vec((0..8).map(|v| v as f32).collect::<Vec<f32>>(), &[8, 1]);
        let p = reordered("w", &[&t], &LSTM_ORDER).expect("reorder");
        assert_eq!(p.dims, [1, 8, 1]);
        assert_eq!(p.data_type, onnx_dtype(DType::F32));
        let vals: Vec<f32> = p
            .raw_data
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(vals, [0.0, 1.0, 6.0, 7.0, 2.0, 3.0, 4.0, 5.0]);
        // B of GRU: [Wb, Rb] each reordered, [1, 2 * 3H]
        let b = Tensor::from_vec((0..3).map(|v| v as f32).collect::<Vec<f32>>(), &[3]);
        let p = reordered("b", &[&b, &b], &GRU_ORDER).expect("reorder");
        assert_eq!(p.dims, [1, 6]);
        assert_eq!(p.raw_data.len(), 24);
    }
}
