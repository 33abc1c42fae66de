//! The graph executor: runs a `Graph` on input tensors without the interpreter, node by
//! node, each node calling the same tensor-library function eager code calls (one
//! `match` over the op), freeing each value after its last use.

use crate::compile::internal;
use crate::compile::ir::{Graph, IrIndex, IrOp, Node, NodeId};
use crate::error::Result;
use crate::ops;
use crate::tensor::indexing::{one_hot, TensorIndex};
use crate::tensor::{linalg, linalg_ops, norm, views, Tensor};

fn dims_i64(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&x| x as i64).collect()
}

/// For each node, the index of the last node using it (`usize::MAX`: a graph output).
pub fn last_uses(g: &Graph) -> Vec<usize> {
    last_reads(g, |_, n| &n.args)
}

/// For each node, the index of the last node whose `reads(index, node)` names it
/// (`usize::MAX`: a graph output): after that node its value can be freed.
pub fn last_reads<'g>(g: &'g Graph, reads: impl Fn(usize, &'g Node) -> &'g [NodeId]) -> Vec<usize> {
    let mut last = vec![0usize; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        for a in reads(i, n) {
            if let Some(l) = last.get_mut(a.index()) {
                *l = i;
            }
        }
    }
    for o in &g.outputs {
        if let Some(l) = last.get_mut(o.index()) {
            *l = usize::MAX;
        }
    }
    last
}

/// Runs `g` on `inputs` (one per `Graph::inputs` slot) and returns its outputs.
pub fn run(g: &Graph, inputs: &[Tensor], last: &[usize]) -> Result<Vec<Tensor>> {
    let mut vals: Vec<Option<Tensor>> = vec![None; g.nodes.len()];
    for (i, node) in g.nodes.iter().enumerate() {
        let args = node
            .args
            .iter()
            .map(|a| vals.get(a.index()).cloned().flatten())
            .collect::<Option<Vec<Tensor>>>()
            .ok_or_else(|| internal("a node's arg was not computed"))?;
        let out = eval(node, &args, inputs).map_err(|mut e| {
            if e.span.is_none() {
                e.span = node.span;
            }
            e
        })?;
        vals[i] = Some(out);
        for a in &node.args {
            if last.get(a.index()) == Some(&i) {
                vals[a.index()] = None;
            }
        }
    }
    g.outputs
        .iter()
        .map(|o| vals.get(o.index()).cloned().flatten())
        .collect::<Option<Vec<Tensor>>>()
        .ok_or_else(|| internal("an output was not computed"))
}

fn arg(args: &[Tensor], k: usize) -> Result<&Tensor> {
    args.get(k).ok_or_else(|| internal("missing arg"))
}

/// Evaluates one node on its computed `args` (the callback `lower::CompiledGraph::run`
/// uses for nodes outside fused kernels). One exhaustive match: an op without an arm
/// here is a compile error.
pub fn eval(node: &Node, args: &[Tensor], inputs: &[Tensor]) -> Result<Tensor> {
    let x = || arg(args, 0);
    let y = || arg(args, 1);
    let dims = dims_i64;
    match &node.op {
        IrOp::Input { slot, .. } => inputs
            .get(*slot)
            .cloned()
            .ok_or_else(|| internal("missing input")),
        IrOp::Const(t) => t.contiguous_copy(),
        IrOp::Unary(op) => ops::unary(*op, x()?),
        IrOp::Binary(op) => ops::binary(*op, x()?, y()?),
        IrOp::BinaryScalar {
            op,
            scalar,
            reverse,
        } => ops::binary_scalar(*op, x()?, *scalar, *reverse),
        IrOp::Clamp { min, max } => ops::clamp(x()?, *min, *max),
        IrOp::Where => select(args),
        IrOp::Cast(dt) => ops::to_dtype(x()?, *dt),
        IrOp::Clone => ops::clone(x()?),
        IrOp::Contiguous => contiguous(x()?),
        IrOp::Sum { dims: d, keepdim } => sum(x()?, d, *keepdim),
        IrOp::Mean { dims: d, keepdim } => x()?.mean(&dims(d), *keepdim),
        IrOp::Prod { dims: d, keepdim } => x()?.prod(&dims(d), *keepdim),
        IrOp::ExtremeAll { is_min } => x()?.extreme_all(*is_min),
        IrOp::ExtremeDim {
            dim,
            keepdim,
            is_min,
        } => x()?
            .extreme_dim(*dim as i64, *keepdim, *is_min)
            .map(|r| r.0),
        IrOp::ArgExtreme {
            dim,
            keepdim,
            is_min,
        } => x()?.arg_extreme(dim.map(|d| d as i64), *keepdim, *is_min),
        IrOp::Var {
            dims: d,
            correction,
            keepdim,
            std,
        } => x()?.var_std(&dims(d), *correction, *keepdim, *std),
        IrOp::LogSumExp { dims: d, keepdim } => x()?.logsumexp(&dims(d), *keepdim),
        IrOp::Norm {
            p,
            dims: d,
            keepdim,
        } => x()?.norm(*p, &dims(d), *keepdim),
        IrOp::AllAny {
            dims: d,
            keepdim,
            any,
        } => x()?.all_any(&dims(d), *keepdim, *any),
        IrOp::Softmax { dim } => x()?.softmax(*dim as i64),
        IrOp::LogSoftmax { dim } => x()?.log_softmax(*dim as i64),
        IrOp::Cumsum { dim, reverse } => cumsum(x()?, *dim, *reverse),
        IrOp::Reshape { shape } => x()?.reshape(&dims(shape)),
        IrOp::Permute { perm } => x()?.permute(&dims(perm)),
        IrOp::Expand { shape, .. } => x()?.expand(&dims(shape)),
        IrOp::Narrow { dim, start, len } => x()?.narrow(*dim as i64, *start as i64, *len as i64),
        IrOp::Repeat { reps } => x()?.repeat(reps),
        IrOp::Index { indices } => index(indices, args),
        IrOp::IndexGrad { shape, indices } => index_grad(shape, indices, args),
        IrOp::Matmul => linalg::matmul(x()?, y()?),
        IrOp::Conv2d { params, bias } => {
            let b = if *bias { Some(arg(args, 2)?) } else { None };
            linalg::conv2d(x()?, y()?, b, *params)
        }
        IrOp::BatchNorm { .. } => norm::batch_norm(x()?, &batch_norm_args(&node.op, args)?),
        IrOp::BatchNormRunning { momentum, var } => {
            norm::batch_norm_running(x()?, y()?, *momentum, *var)
        }
        IrOp::LayerNorm {
            dims: d,
            eps,
            weight,
            bias,
        } => layer_norm(args, *d, *eps, (*weight, *bias)),
        IrOp::GroupNorm {
            groups,
            eps,
            weight,
            bias,
        } => group_norm(args, *groups, *eps, (*weight, *bias)),
        IrOp::Attention {
            causal,
            scale,
            mask,
        } => crate::tensor::attention_exec::forward(args, *causal, *scale, *mask),
        IrOp::LstmLayer => crate::tensor::recurrence::exec_lstm(args),
        IrOp::GruLayer { bias } => crate::tensor::recurrence::exec_gru(args, *bias),
        IrOp::MaxPool2d { params } => linalg::max_pool2d(x()?, *params),
        IrOp::AvgPool2d { params } => linalg::avg_pool2d(x()?, *params),
        IrOp::Cat { dim } => views::cat(args, *dim as i64),
        IrOp::Stack { dim } => views::stack(args, *dim as i64),
        IrOp::IndexSelect { dim } => x()?.index_select(*dim as i64, y()?),
        IrOp::Gather { dim } => x()?.gather(*dim as i64, y()?),
        IrOp::ScatterAdd { dim } => x()?.scatter_add(*dim as i64, y()?, arg(args, 2)?),
        IrOp::Scatter { dim } => x()?.scatter_overwrite(*dim as i64, y()?, arg(args, 2)?),
        IrOp::Linalg(op) => linalg_ops::run(*op, &args.iter().collect::<Vec<_>>()),
        IrOp::OneHot { num_classes } => one_hot(x()?, *num_classes as i64),
        IrOp::ModeIndices { dim } => crate::tensor::sorting::mode_positions(x()?, *dim),
        IrOp::SortIndices { dim, descending, k } => {
            crate::tensor::sorting::sorted_positions(x()?, *dim, *descending, *k)
        }
        IrOp::MaskedFill { value } => x()?.masked_fill(y()?, *value),
        IrOp::FillLike { fill, dtype } => crate::tensor::creation::fill_like(x()?, *fill, *dtype),
        IrOp::GradKernel(k) => crate::autograd::grad_kernel(k, &args.iter().collect::<Vec<_>>()),
        // control nodes run in run_control.rs (their regions need the whole runtime)
        IrOp::If(_) | IrOp::Loop(_) | IrOp::Out { .. } | IrOp::Print(_) => {
            Err(internal(&format!("no executor for {}", node.op.name())))
        }
    }
}

/// `where(c, a, b)`, through the fast path when it applies.
fn select(args: &[Tensor]) -> Result<Tensor> {
    let (c, a, b) = (arg(args, 0)?, arg(args, 1)?, arg(args, 2)?);
    crate::compile::runtime::fastpath::select(c, a, b).unwrap_or_else(|| ops::where_(c, a, b))
}

/// A contiguous `x` (a transposed f32 matrix copied row by row of its source).
fn contiguous(x: &Tensor) -> Result<Tensor> {
    match transposed_copy(x)? {
        Some(t) => Ok(t),
        None => x.contiguous(),
    }
}

fn sum(x: &Tensor, dims: &[usize], keepdim: bool) -> Result<Tensor> {
    crate::compile::runtime::fastpath::column_sum(x, dims, keepdim)
        .unwrap_or_else(|| x.sum(&dims_i64(dims), keepdim))
}

fn cumsum(x: &Tensor, dim: usize, reverse: bool) -> Result<Tensor> {
    match reverse {
        false => x.cumsum(dim as i64),
        true => x.cumsum_reverse(dim),
    }
}

fn index(indices: &[IrIndex], args: &[Tensor]) -> Result<Tensor> {
    let x = arg(args, 0)?;
    match row_index(indices, args) {
        Some(i) => match copy_row(x, i)? {
            Some(row) => Ok(row),
            None => x.index(&[TensorIndex::Int(i)])?.contiguous_copy(),
        },
        None => x.index(&to_indices(indices, args)?),
    }
}

fn index_grad(shape: &[usize], indices: &[IrIndex], args: &[Tensor]) -> Result<Tensor> {
    let g = arg(args, 0)?;
    let z = crate::tensor::creation::zeros(shape, g.dtype())?;
    z.index_put_raw(&to_indices(indices, args)?, g, true)?;
    Ok(z)
}

/// layer_norm of arg 0 with the weight and the bias args present per `(weight, bias)`.
fn layer_norm(args: &[Tensor], dims: usize, eps: f64, params: (bool, bool)) -> Result<Tensor> {
    let (w, b) = norm_params(args, params)?;
    norm::layer_norm(arg(args, 0)?, dims, w, b, eps)
}

/// The weight and the bias args (after arg 0) present per `(weight, bias)`.
fn norm_params(
    args: &[Tensor],
    params: (bool, bool),
) -> Result<(Option<&Tensor>, Option<&Tensor>)> {
    let (weight, bias) = params;
    let w = if weight { Some(arg(args, 1)?) } else { None };
    let b = match bias {
        true => Some(arg(args, 1 + usize::from(weight))?),
        false => None,
    };
    Ok((w, b))
}

/// group_norm of arg 0 with the weight and the bias args present per `(weight, bias)`.
fn group_norm(args: &[Tensor], groups: usize, eps: f64, params: (bool, bool)) -> Result<Tensor> {
    let (w, b) = norm_params(args, params)?;
    crate::tensor::group_norm::group_norm(arg(args, 0)?, groups, w, b, eps)
}

/// The operands and options of a `batch_norm` node (`op`) run on `args`.
pub(super) fn batch_norm_args<'a>(
    op: &IrOp,
    args: &'a [Tensor],
) -> Result<norm::BatchNormArgs<'a>> {
    let IrOp::BatchNorm {
        training,
        eps,
        weight,
        bias,
    } = op
    else {
        return Err(internal("batch_norm operands of another op"));
    };
    let at = if *training { 1 } else { 3 };
    let running = match training {
        false => Some((arg(args, 1)?, arg(args, 2)?)),
        true => None,
    };
    let w = if *weight { Some(arg(args, at)?) } else { None };
    let b = match bias {
        true => Some(arg(args, at + usize::from(*weight))?),
        false => None,
    };
    Ok(norm::BatchNormArgs {
        running,
        weight: w,
        bias: b,
        training: *training,
        momentum: 0.0,
        eps: *eps,
    })
}

/// `x[t]` with a 0-d integer tensor `t` (a loop's index): the value to index with as a
/// plain integer. Eager's advanced indexing copies the row through its general gather;
/// the executor selects the row as a view and copies it (the same values, still a copy).
/// Not while a capture records (a loop body replayed to derive its backward): there the
/// index must stay a runtime tensor, and reading it would break the graph.
fn row_index(ix: &[IrIndex], args: &[Tensor]) -> Option<i64> {
    let [IrIndex::Indices { arg: k }] = ix else {
        return None;
    };
    if crate::compile::capture::trace::capturing() {
        return None;
    }
    let t = args.get(*k)?;
    if t.ndim() != 0 || t.dtype() != crate::tensor::DType::I64 {
        return None;
    }
    t.item().ok().map(|s| match s {
        crate::tensor::dtype::Scalar::Int(i) => Some(i),
        _ => None,
    })?
}

/// Row `i` of a contiguous f32 `x` (`i` counted from the end when negative) as a fresh
/// tensor: the copy eager's `x[t]` makes, without the general indexing path. None (the
/// caller takes that path, which raises eager's errors) for other tensors or an index
/// out of range.
fn copy_row(x: &Tensor, i: i64) -> Result<Option<Tensor>> {
    let Some((&rows, rest)) = x.shape().split_first() else {
        return Ok(None);
    };
    let pos = if i < 0 { i + rows as i64 } else { i };
    let Some(pos) = usize::try_from(pos).ok().filter(|&p| p < rows) else {
        return Ok(None);
    };
    // Contiguous f32 only.
    let Some(d) = x.f32_elems() else {
        return Ok(None);
    };
    let len: usize = rest.iter().product();
    let Some(src) = d.get(pos * len..(pos + 1) * len) else {
        return Ok(None);
    };
    let mut v = crate::tensor::storage::alloc_vec::<f32>(len)?;
    v.extend_from_slice(src);
    Tensor::from_buffer(crate::tensor::Buffer::F32(v), rest).map(Some)
}

/// The contiguous copy of a transposed f32 matrix (`[r, c]` with strides `[1, r]`: a
/// permuted row-major `[c, r]`, as a loop's transposed weight is) read row by row of its
/// source; None for any other tensor (the general strided copy then runs).
fn transposed_copy(x: &Tensor) -> Result<Option<Tensor>> {
    let (&[r, c], &[1, ld]) = (x.shape(), x.strides()) else {
        return Ok(None);
    };
    if x.dtype() != crate::tensor::DType::F32 || ld != r || r < 2 || c < 2 {
        return Ok(None);
    }
    let data = x.storage().borrow();
    let crate::tensor::Buffer::F32(d) = &*data else {
        return Ok(None);
    };
    let Some(src) = d.get(x.offset()..x.offset() + r * c) else {
        return Ok(None);
    };
    let mut out = crate::tensor::storage::alloc_filled(r * c, 0.0f32)?;
    // Source row j is column j of the result: result row i reads element i of every
    // source row (a plain index loop; `out` has exactly `r * c` elements).
    for (i, dst) in out.chunks_exact_mut(c).enumerate() {
        for (j, d) in dst.iter_mut().enumerate() {
            if let Some(&v) = src.get(j * r + i) {
                *d = v;
            }
        }
    }
    Tensor::from_buffer(crate::tensor::Buffer::F32(out), &[r, c]).map(Some)
}

/// Rebuilds a tensor-library index list from an `Index` node's entries and args.
fn to_indices(ix: &[IrIndex], args: &[Tensor]) -> Result<Vec<TensorIndex>> {
    ix.iter()
        .map(|i| {
            Ok(match i {
                IrIndex::Int(v) => TensorIndex::Int(*v),
                IrIndex::Slice { start, stop, step } => TensorIndex::Slice {
                    start: *start,
                    stop: *stop,
                    step: *step,
                },
                IrIndex::SymSlice { start, len, .. } => TensorIndex::Slice {
                    start: Some(*start),
                    stop: Some(start.saturating_add(*len)),
                    step: None,
                },
                IrIndex::NewAxis => TensorIndex::NewAxis,
                IrIndex::Ellipsis => TensorIndex::Ellipsis,
                IrIndex::Mask { arg: k } => TensorIndex::Mask(arg(args, *k)?.clone()),
                IrIndex::Indices { arg: k } => TensorIndex::Indices(arg(args, *k)?.clone()),
            })
        })
        .collect()
}
