//! Shape ops: reshape/view, flatten, squeeze/unsqueeze, transpose/permute/.T, expand,
//! narrow, contiguous, cat/stack, split/chunk, repeat. Views share storage; each op
//! records its autograd node.

use super::dtype::{with_elem, DType};
use super::indexing::TensorIndex;
use super::shape::{
    contiguous_strides, fmt_shape, norm_dim, norm_dims, norm_insert_dim, numel, view_strides, Dims,
};
use super::storage::alloc_vec;
use super::{err, Tensor};
use crate::autograd::{self, BackwardOp, More, OpSaved, ViewCall};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::{record_const, record_op};
use crate::ir::IrOp;
use smallvec::SmallVec;

fn shape_err(msg: String) -> crate::error::Error {
    err(ErrorKind::ShapeError, msg)
}

/// Resolve a `-1` in a requested shape against `n` elements.
fn infer_shape(op: &str, from: &[usize], req: &[i64]) -> Result<Dims> {
    let n: usize = from.iter().product();
    let mut out: Dims = SmallVec::with_capacity(req.len());
    let mut infer = None;
    for (i, &d) in req.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return Err(shape_err(format!(
                    "{op}: only one dimension can be inferred"
                )));
            }
            infer = Some(i);
            out.push(1);
        } else if d < 0 {
            return Err(shape_err(format!("{op}: invalid shape dimension {d}")));
        } else {
            out.push(d as usize);
        }
    }
    let known = numel(&out)?;
    if let Some(i) = infer {
        if known == 0 || !n.is_multiple_of(known) {
            return Err(shape_err(format!(
                "{op}: shape '{}' is invalid for input of size {n}",
                fmt_req(req)
            )));
        }
        out[i] = n / known;
    } else if known != n {
        return Err(shape_err(format!(
            "{op}: shape '{}' is invalid for input of size {n}",
            fmt_req(req)
        )));
    }
    Ok(out)
}

fn fmt_req(req: &[i64]) -> String {
    let parts: Vec<String> = req.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

impl Tensor {
    /// A contiguous copy (always a new storage), no autograd.
    pub fn contiguous_copy(&self) -> Result<Tensor> {
        Ok(with_elem!(self.dtype(), T => Tensor::from_vec(self.to_vec::<T>()?, self.shape())))
    }

    fn record_reshape(&self, out: &Tensor, call: ViewCall) {
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a_shape: self.shape().into(),
                more: More::View(call),
                ..OpSaved::default()
            };
            let op = IrOp::Reshape {
                shape: out.shape().into(),
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(out, node, &[self]);
        }
    }

    /// Reshape without autograd (view when contiguous, else copy). The element counts
    /// must agree (a mismatch is an internal error, never a malformed view).
    pub(crate) fn reshape_raw(&self, shape: &[usize]) -> Result<Tensor> {
        if numel(shape)? != self.numel() {
            return Err(err(
                ErrorKind::RuntimeError,
                format!(
                    "internal error: reshape of {} elements {} to {} (this is a bug in Kiln)",
                    self.numel(),
                    fmt_shape(self.shape()),
                    fmt_shape(shape)
                ),
            ));
        }
        let base = if self.is_contiguous() {
            self.detach()
        } else {
            self.contiguous_copy()?
        };
        Ok(base.view_with(shape.into(), contiguous_strides(shape), base.offset()))
    }

    /// `reshape(*shape)` with one `-1` allowed: a view when possible, else a copy.
    pub fn reshape(&self, req: &[i64]) -> Result<Tensor> {
        let out = self.reshape_structural(req)?;
        trace::note_request(&out, req);
        Ok(out)
    }

    /// `reshape` whose requested sizes are derived from the input's own shape (flatten):
    /// symbolic shapes follow the shapes, not the request.
    fn reshape_structural(&self, req: &[i64]) -> Result<Tensor> {
        let ir = |out: &Tensor| IrOp::Reshape {
            shape: out.shape().into(),
        };
        record_op(&[self], ir, || self.reshape_eager(req))
    }

    fn reshape_eager(&self, req: &[i64]) -> Result<Tensor> {
        let shape = infer_shape("reshape", self.shape(), req)?;
        let (out, call) = match self.view_raw(&shape) {
            Some(v) => {
                v.mark_view_of(self);
                (v, ViewCall::View)
            }
            None => (self.reshape_raw(&shape)?, ViewCall::UnsafeView),
        };
        self.record_reshape(&out, call);
        Ok(out)
    }

    /// A view of this tensor as `shape` (same element count) over its own strides, or
    /// None when the layout cannot express it without a copy (see `view_strides`).
    fn view_raw(&self, shape: &[usize]) -> Option<Tensor> {
        if self.is_contiguous() {
            let d = self.detach();
            return Some(d.view_with(shape.into(), contiguous_strides(shape), d.offset()));
        }
        let st = view_strides(self.shape(), self.strides(), shape)?;
        Some(self.view_with(shape.into(), st, self.offset()))
    }

    /// `view(*shape)`: like reshape but never copies.
    pub fn view(&self, req: &[i64]) -> Result<Tensor> {
        let shape = infer_shape("view", self.shape(), req)?;
        if !self.is_contiguous() && view_strides(self.shape(), self.strides(), &shape).is_none() {
            return Err(err(
                ErrorKind::RuntimeError,
                "view size is not compatible with input tensor's size and stride (at least \
                 one dimension spans across two contiguous subspaces). Use .reshape(...) \
                 instead.",
            ));
        }
        self.reshape(req)
    }

    /// `flatten(start_dim=0, end_dim=-1)`.
    pub fn flatten(&self, start: i64, end: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return self.reshape_structural(&[1]);
        }
        let (s, e) = (
            norm_dim("flatten", start, self.ndim())?,
            norm_dim("flatten", end, self.ndim())?,
        );
        if s > e {
            return Err(err(
                ErrorKind::ValueError,
                "flatten: start_dim cannot come after end_dim",
            ));
        }
        let sh = self.shape();
        let mut req: Vec<i64> = sh[..s].iter().map(|&d| d as i64).collect();
        req.push(sh[s..=e].iter().product::<usize>() as i64);
        req.extend(sh[e + 1..].iter().map(|&d| d as i64));
        self.reshape_structural(&req)
    }

    /// `squeeze(dim=None)`: drop size-1 dims (a view).
    pub fn squeeze(&self, dim: Option<i64>) -> Result<Tensor> {
        match dim {
            None => self.squeeze_some(None, ViewCall::SqueezeAll),
            Some(d) => self.squeeze_some(Some(&[d]), ViewCall::SqueezeDim),
        }
    }

    /// `squeeze(dims)` of a tuple: drop those of `dims` that have size 1 (a view).
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Tensor> {
        self.squeeze_some(Some(dims), ViewCall::SqueezeDims)
    }

    fn squeeze_some(&self, dims: Option<&[i64]>, call: ViewCall) -> Result<Tensor> {
        let ir = |out: &Tensor| IrOp::Reshape {
            shape: out.shape().into(),
        };
        record_op(&[self], ir, || self.squeeze_eager(dims, call))
    }

    fn squeeze_eager(&self, dims: Option<&[i64]>, call: ViewCall) -> Result<Tensor> {
        let keep: Vec<usize> = match dims {
            None => (0..self.ndim()).filter(|&i| self.shape()[i] != 1).collect(),
            Some(dims) => {
                if self.ndim() == 0 {
                    return Ok(self.clone());
                }
                let drop = dims
                    .iter()
                    .map(|&d| norm_dim("squeeze", d, self.ndim()))
                    .collect::<Result<Vec<usize>>>()?;
                (0..self.ndim())
                    .filter(|&i| !drop.contains(&i) || self.shape()[i] != 1)
                    .collect()
            }
        };
        let shape: Dims = keep.iter().map(|&i| self.shape()[i]).collect();
        let strides: Dims = keep.iter().map(|&i| self.strides()[i]).collect();
        let out = self.view_with(shape, strides, self.offset());
        out.mark_view_of(self);
        self.record_reshape(&out, call);
        Ok(out)
    }

    /// `unsqueeze(dim)`: insert a size-1 dim (a view).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let ir = |out: &Tensor| IrOp::Reshape {
            shape: out.shape().into(),
        };
        record_op(&[self], ir, || self.unsqueeze_eager(dim))
    }

    fn unsqueeze_eager(&self, dim: i64) -> Result<Tensor> {
        let d = norm_insert_dim("unsqueeze", dim, self.ndim())?;
        let mut shape: Dims = self.shape().into();
        let mut strides: Dims = self.strides().into();
        let st = if d < self.ndim() {
            self.strides()[d] * self.shape()[d]
        } else {
            1
        };
        shape.insert(d, 1);
        strides.insert(d, st);
        let out = self.view_with(shape, strides, self.offset());
        out.mark_view_of(self);
        self.record_reshape(&out, ViewCall::Unsqueeze);
        Ok(out)
    }

    /// `permute(*dims)` (a view).
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Permute {
            perm: dims.iter().map(|&d| trace::dim(d, self.ndim())).collect(),
        };
        record_op(&[self], ir, || self.permute_eager(dims))
    }

    fn permute_eager(&self, dims: &[i64]) -> Result<Tensor> {
        if dims.len() != self.ndim() {
            return Err(shape_err(format!(
                "permute: number of dims {} does not match the tensor's {} dims",
                dims.len(),
                self.ndim()
            )));
        }
        let mut perm = Vec::with_capacity(dims.len());
        for &d in dims {
            let d = norm_dim("permute", d, self.ndim())?;
            if perm.contains(&d) {
                return Err(err(ErrorKind::RuntimeError, "permute: repeated dim"));
            }
            perm.push(d);
        }
        Ok(self.permute_raw(&perm, true))
    }

    pub(crate) fn permute_raw(&self, perm: &[usize], grad: bool) -> Tensor {
        self.permute_as(perm, grad, ViewCall::View)
    }

    /// `permute_raw` recording a node named as `call`.
    fn permute_as(&self, perm: &[usize], grad: bool, call: ViewCall) -> Tensor {
        let shape: Dims = perm.iter().map(|&i| self.shape()[i]).collect();
        let strides: Dims = perm.iter().map(|&i| self.strides()[i]).collect();
        let out = self.view_with(shape, strides, self.offset());
        if grad {
            out.mark_view_of(self);
        }
        if grad && autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                more: More::View(call),
                ..OpSaved::default()
            };
            let op = IrOp::Permute {
                perm: perm.to_vec(),
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&out, node, &[self]);
        }
        out
    }

    /// `transpose(d0, d1)` (a view).
    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Tensor> {
        let ir = |_: &Tensor| {
            let mut perm: Vec<usize> = (0..self.ndim()).collect();
            if self.ndim() > 0 {
                perm.swap(trace::dim(d0, self.ndim()), trace::dim(d1, self.ndim()));
            }
            IrOp::Permute { perm }
        };
        record_op(&[self], ir, || self.transpose_eager(d0, d1))
    }

    fn transpose_eager(&self, d0: i64, d1: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        let a = norm_dim("transpose", d0, self.ndim())?;
        let b = norm_dim("transpose", d1, self.ndim())?;
        let mut perm: Vec<usize> = (0..self.ndim()).collect();
        perm.swap(a, b);
        Ok(self.permute_as(&perm, true, ViewCall::Transpose))
    }

    /// `.T`: all dims reversed.
    pub fn t(&self) -> Tensor {
        self.t_as(ViewCall::View)
    }

    /// The `t()` method: `.T` with its own node name (`TBackward0`).
    pub fn t_method(&self) -> Tensor {
        self.t_as(ViewCall::T)
    }

    fn t_as(&self, call: ViewCall) -> Tensor {
        let sc = trace::scope();
        let perm: Vec<usize> = (0..self.ndim()).rev().collect();
        let out = self.permute_as(&perm, true, call);
        let ir = || IrOp::Permute {
            perm: (0..self.ndim()).rev().collect(),
        };
        sc.record(ir, &[self], &out);
        out
    }

    /// Broadcast view to `shape` without autograd (caller-checked sizes).
    pub(crate) fn expand_raw(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let sh = super::shape::broadcast_shapes("expand", self.shape(), shape)?;
        if sh.as_slice() != shape {
            return Err(shape_err(format!(
                "expand: the expanded size {} must match the existing size {}",
                fmt_shape(shape),
                fmt_shape(self.shape())
            )));
        }
        let st = super::shape::broadcast_strides(self.shape(), self.strides(), shape);
        Ok(self.view_with(shape.into(), st, self.offset()))
    }

    /// `expand(*sizes)`, `-1` keeping a size (a view with stride 0).
    pub fn expand(&self, req: &[i64]) -> Result<Tensor> {
        let ir = |out: &Tensor| IrOp::Expand {
            shape: out.shape().into(),
            sym: Box::default(),
        };
        let out = record_op(&[self], ir, || self.expand_eager(req))?;
        trace::note_request(&out, req);
        Ok(out)
    }

    fn expand_eager(&self, req: &[i64]) -> Result<Tensor> {
        if req.len() < self.ndim() {
            return Err(shape_err(format!(
                "expand: the number of sizes provided ({}) must be greater or equal to the \
                 number of dimensions in the tensor ({})",
                req.len(),
                self.ndim()
            )));
        }
        let lead = req.len() - self.ndim();
        let mut shape: Dims = SmallVec::with_capacity(req.len());
        for (i, &r) in req.iter().enumerate() {
            shape.push(if r == -1 && i >= lead {
                self.shape()[i - lead]
            } else if r < 0 {
                return Err(shape_err(format!("expand: invalid size {r}")));
            } else {
                r as usize
            });
        }
        let mut out = self.expand_raw(&shape)?;
        if out.same(self) && autograd::needs_grad(&[self]) {
            // A view carries the node: recorded on `self` itself, it would replace
            // self's own node (a leaf would stop being one after its first backward).
            out = self.view_with(shape, self.strides().into(), self.offset());
        }
        if !out.same(self) {
            out.mark_view_of(self);
        }
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a_shape: self.shape().into(),
                ..OpSaved::default()
            };
            let op = IrOp::Expand {
                shape: out.shape().into(),
                sym: Box::default(),
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `contiguous()`: self when already contiguous, else a differentiable copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        record_op(&[self], |_| IrOp::Contiguous, || self.contiguous_eager())
    }

    fn contiguous_eager(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        super::pointwise::clone(self)
    }

    /// `narrow(dim, start, length)` (a view).
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        let ir = |_: &Tensor| {
            let d = trace::dim(dim, self.ndim());
            let size = self.shape().get(d).copied().unwrap_or(0) as i64;
            if start < 0 {
                trace::note_size_read(self, Some(d));
            }
            let s = if start < 0 { start + size } else { start };
            IrOp::Narrow {
                dim: d,
                start: s.max(0) as usize,
                len: length.max(0) as usize,
            }
        };
        record_op(&[self], ir, || self.narrow_eager(dim, start, length))
    }

    fn narrow_eager(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        let d = norm_dim("narrow", dim, self.ndim())?;
        let size = self.shape().get(d).copied().unwrap_or(0) as i64;
        let s = if start < 0 { start + size } else { start };
        if s < 0 || length < 0 || s + length > size {
            return Err(err(
                ErrorKind::RuntimeError,
                format!("narrow: start ({start}) + length ({length}) exceeds dimension {d} of size {size}"),
            ));
        }
        let mut idx: Vec<TensorIndex> = vec![TensorIndex::full(); d];
        idx.push(TensorIndex::Slice {
            start: Some(s),
            stop: Some(s + length),
            step: None,
        });
        self.index(&idx)
    }

    /// `split(size, dim)`: pieces of `size` along `dim` (the last may be smaller).
    pub fn split(&self, size: usize, dim: i64) -> Result<Vec<Tensor>> {
        if size == 0 {
            return Err(err(
                ErrorKind::RuntimeError,
                "split: split_size must be positive",
            ));
        }
        let d = norm_dim("split", dim, self.ndim())?;
        let n = self.shape().get(d).copied().unwrap_or(0);
        let sizes: Vec<usize> = (0..n.div_ceil(size))
            .map(|i| size.min(n - i * size))
            .collect();
        let since = autograd::next_node_id();
        let out = self.split_sizes(&sizes, dim)?;
        for piece in &out {
            autograd::names::name_composite(piece, since, "SplitBackward0");
        }
        Ok(out)
    }

    /// `split([s0, s1, ...], dim)`: pieces of the given sizes.
    pub fn split_sizes(&self, sizes: &[usize], dim: i64) -> Result<Vec<Tensor>> {
        let d = norm_dim("split", dim, self.ndim())?;
        let n = self.shape().get(d).copied().unwrap_or(0);
        // The pieces' count and sizes become Python values and narrow attributes.
        trace::note_size_read(self, Some(d));
        if sizes.iter().sum::<usize>() != n {
            return Err(shape_err(format!(
                "split: split sizes {:?} do not sum to the size {n} of dim {d}",
                sizes
            )));
        }
        let mut start = 0;
        let mut out = Vec::with_capacity(sizes.len());
        let since = autograd::next_node_id();
        for &s in sizes {
            let piece = self.narrow(d as i64, start as i64, s as i64)?;
            autograd::names::name_composite(&piece, since, "SplitWithSizesBackward0");
            out.push(piece);
            start += s;
        }
        Ok(out)
    }

    /// `chunk(chunks, dim)`: at most `chunks` pieces of equal size (ceil).
    pub fn chunk(&self, chunks: usize, dim: i64) -> Result<Vec<Tensor>> {
        if chunks == 0 {
            return Err(err(
                ErrorKind::RuntimeError,
                "chunk: chunks must be positive",
            ));
        }
        let d = norm_dim("chunk", dim, self.ndim())?;
        let n = self.shape().get(d).copied().unwrap_or(0);
        self.split(n.div_ceil(chunks).max(1), dim)
    }

    /// `repeat(*reps)`: tile the tensor (expand + reshape, so the gradient is free).
    pub fn repeat(&self, reps: &[usize]) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Repeat {
            reps: reps.to_vec(),
        };
        let since = autograd::next_node_id();
        let out = record_op(&[self], ir, || self.repeat_eager(reps))?;
        autograd::names::name_composite(&out, since, "RepeatBackward0");
        Ok(out)
    }

    fn repeat_eager(&self, reps: &[usize]) -> Result<Tensor> {
        if reps.len() < self.ndim() {
            return Err(shape_err(format!(
                "repeat: number of repeat dims ({}) can not be smaller than number of tensor dims ({})",
                reps.len(),
                self.ndim()
            )));
        }
        let lead = reps.len() - self.ndim();
        let mut src: Vec<i64> = Vec::new();
        let mut big: Vec<i64> = Vec::new();
        let mut fin: Vec<i64> = Vec::new();
        for (i, &r) in reps.iter().enumerate() {
            let s = if i >= lead { self.shape()[i - lead] } else { 1 };
            src.extend([1, s as i64]);
            big.extend([r as i64, s as i64]);
            fin.push((r * s) as i64);
        }
        numel(&fin.iter().map(|&x| x as usize).collect::<Vec<_>>())?;
        let out = self.reshape(&src)?.expand(&big)?.reshape(&fin)?;
        // `repeat` always returns new memory, as PyTorch's (reshape may now give a view,
        // e.g. of a stride-0 expand: writing one element would write them all)
        if out.shares_storage(self) {
            return out.contiguous_copy();
        }
        Ok(out)
    }
}

/// `cat(tensors, dim)`.
pub fn cat(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    let nd = ts.first().map_or(0, |t| t.ndim());
    let args: Vec<&Tensor> = ts.iter().collect();
    let ir = |_: &Tensor| IrOp::Cat {
        dim: trace::dim(dim, nd),
    };
    record_op(&args, ir, || cat_eager(ts, dim))
}

fn cat_eager(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    let first = ts.first().ok_or_else(|| {
        err(
            ErrorKind::ValueError,
            "cat: expected a non-empty list of tensors",
        )
    })?;
    let d = norm_dim("cat", dim, first.ndim())?;
    let dt = ts
        .iter()
        .fold(first.dtype(), |acc, t| acc.promote(t.dtype()));
    let mut out_shape: Dims = first.shape().into();
    let mut total = 0;
    for t in ts {
        let same_rank = t.ndim() == first.ndim();
        let ok = same_rank && (0..t.ndim()).all(|i| i == d || t.shape()[i] == first.shape()[i]);
        if !ok || t.ndim() == 0 {
            return Err(shape_err(format!(
                "cat: shapes {} and {} cannot be concatenated along dim {d}",
                fmt_shape(first.shape()),
                fmt_shape(t.shape())
            )));
        }
        total += t.shape()[d];
    }
    out_shape[d] = total;
    let out = with_elem!(dt, T => cat_typed::<T>(ts, d, &out_shape, dt)?);
    let refs: Vec<&Tensor> = ts.iter().collect();
    if dt.is_float() && autograd::needs_grad(&refs) {
        let saved = OpSaved {
            more: More::Sizes(ts.iter().map(|t| t.shape()[d]).collect()),
            ..OpSaved::default()
        };
        let node = BackwardOp::Op {
            op: IrOp::Cat { dim: d },
            saved,
        };
        autograd::record(&out, node, &refs);
    }
    Ok(out)
}

fn cat_typed<T: super::Elem>(
    ts: &[Tensor],
    d: usize,
    out_shape: &[usize],
    dt: DType,
) -> Result<Tensor> {
    let outer: usize = out_shape[..d].iter().product();
    let parts: Vec<(Vec<T>, usize)> = ts
        .iter()
        .map(|t| {
            let inner: usize = t.shape()[d..].iter().product();
            Ok((t.cast(dt)?.to_vec::<T>()?, inner))
        })
        .collect::<Result<_>>()?;
    let mut out = alloc_vec::<T>(numel(out_shape)?)?;
    for o in 0..outer {
        for (v, inner) in &parts {
            out.extend_from_slice(v.get(o * inner..(o + 1) * inner).unwrap_or(&[]));
        }
    }
    Ok(Tensor::from_vec(out, out_shape))
}

/// `stack(tensors, dim)`: unsqueeze each, then cat.
pub fn stack(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    let nd = ts.first().map_or(0, |t| t.ndim());
    let args: Vec<&Tensor> = ts.iter().collect();
    let ir = |_: &Tensor| IrOp::Stack {
        dim: trace::dim(dim, nd + 1),
    };
    record_op(&args, ir, || stack_eager(ts, dim))
}

fn stack_eager(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    let first = ts.first().ok_or_else(|| {
        err(
            ErrorKind::ValueError,
            "stack: expected a non-empty list of tensors",
        )
    })?;
    for t in ts {
        if t.shape() != first.shape() {
            return Err(shape_err(format!(
                "stack: expects each tensor to be equal size, but got {} and {}",
                fmt_shape(first.shape()),
                fmt_shape(t.shape())
            )));
        }
    }
    if let Some(out) = stack_rows(ts, dim)? {
        return Ok(out);
    }
    let since = autograd::next_node_id();
    let us: Vec<Tensor> = ts.iter().map(|t| t.unsqueeze(dim)).collect::<Result<_>>()?;
    let out = cat(&us, dim)?;
    autograd::names::name_composite(&out, since, "StackBackward0");
    Ok(out)
}

/// `stack(ts, 0)` of f32 tensors of one shape, none needing grad: the rows copied one
/// after another into one buffer (a loop's scan outputs; the general way costs a view
/// and a copy per row). `None`: the general way applies.
fn stack_rows(ts: &[Tensor], dim: i64) -> Result<Option<Tensor>> {
    let refs: Vec<&Tensor> = ts.iter().collect();
    if dim != 0 || ts.iter().any(|t| t.dtype() != DType::F32) || autograd::needs_grad(&refs) {
        return Ok(None);
    }
    let Some(first) = ts.first() else {
        return Ok(None);
    };
    let total = first
        .numel()
        .checked_mul(ts.len())
        .ok_or_else(|| shape_err("stack: the result is too large".to_string()))?;
    let mut data = alloc_vec::<f32>(total)?;
    for t in ts {
        t.read(|row: &[f32]| data.extend_from_slice(row))?;
    }
    let mut dims: Dims = first.shape().into();
    dims.insert(0, ts.len());
    Ok(Some(Tensor::from_vec(data, &dims)))
}

/// `flip(x, dims)`: a copy reversed along each of `dims` (an `index_select` per dim;
/// cumsum's create-graph gradient reverses with it). A capture records each index as a
/// constant of the dim's size, so it reads that size (a symbolic dim is specialised).
pub fn flip(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let mut out = x.clone();
    for d in norm_dims("flip", dims, x.ndim())? {
        if x.ndim() == 0 {
            break;
        }
        trace::note_size_read(x, Some(d));
        let n = x.shape()[d] as i64;
        out = out.index_select(
            d as i64,
            &record_const(|| super::creation::from_i64((0..n).rev().collect(), &[n as usize]))?,
        )?;
    }
    if out.same(x) {
        return super::pointwise::clone(x);
    }
    Ok(out)
}
