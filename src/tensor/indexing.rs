//! Indexing with NumPy/PyTorch semantics: `TensorIndex` lists resolve to a view (basic
//! indexing: ints, slices, None, ...) plus optional advanced indices (integer tensors,
//! bool masks) that gather a copy. Also `index_put_`, `index_select`, `gather`,
//! `scatter_add`, `one_hot`, `masked_fill`.

use super::dtype::{with_elem, DType, Scalar};
use super::kernels::elementwise;
use super::kernels::index::{dim_offsets, put, take, Targets};
use super::kernels::strided::for_each_offset;
use super::shape::{broadcast_shapes, fmt_shape, norm_dim, Dims};
use super::{creation, err, Tensor};
use crate::autograd::{self, BackwardOp, Edge, More, OpSaved};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::IrOp;
use smallvec::SmallVec;

/// One entry of an index expression `x[a, b, ...]`.
#[derive(Debug, Clone)]
pub enum TensorIndex {
    Int(i64),
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    NewAxis,
    Ellipsis,
    /// A bool tensor selecting elements over as many dims as it has.
    Mask(Tensor),
    /// An int64 tensor of indices into one dim.
    Indices(Tensor),
}

impl TensorIndex {
    /// `:`.
    pub fn full() -> TensorIndex {
        TensorIndex::Slice {
            start: None,
            stop: None,
            step: None,
        }
    }
}

fn index_err(msg: String) -> crate::error::Error {
    err(ErrorKind::IndexError, msg)
}

/// The result of resolving an index: a view, or offsets gathered from its storage.
enum Resolved {
    View(Tensor),
    Gather {
        base: Tensor,
        offsets: Vec<usize>,
        shape: Dims,
    },
}

/// Python slice bounds clamped to `size` (step > 0): (start, len).
fn slice_bounds(start: Option<i64>, stop: Option<i64>, step: i64, size: usize) -> (usize, usize) {
    let n = size as i64;
    let clamp = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let s = start.map_or(0, clamp);
    let e = stop.map_or(n, clamp);
    let len = if e > s { (e - s + step - 1) / step } else { 0 };
    (s as usize, len as usize)
}

fn dims_consumed(idx: &[TensorIndex]) -> Result<usize> {
    let mut n = 0;
    let mut ell = 0;
    for i in idx {
        n += match i {
            TensorIndex::Int(_) | TensorIndex::Slice { .. } | TensorIndex::Indices(_) => 1,
            TensorIndex::Mask(m) => m.ndim(),
            TensorIndex::NewAxis => 0,
            TensorIndex::Ellipsis => {
                ell += 1;
                0
            }
        };
    }
    if ell > 1 {
        return Err(index_err(
            "an index can only have a single ellipsis ('...')".into(),
        ));
    }
    Ok(n)
}

/// Positions of the true elements of a bool mask: one i64 coordinate tensor per dim.
fn nonzero(m: &Tensor) -> Result<Vec<Tensor>> {
    let vals = m.to_vec::<bool>()?;
    let nd = m.ndim();
    let cnt = vals.iter().filter(|&&b| b).count();
    let mut coords: Vec<Vec<i64>> = (0..nd).map(|_| Vec::with_capacity(cnt)).collect();
    let mut c = vec![0usize; nd];
    for &b in &vals {
        if b {
            for d in 0..nd {
                coords[d].push(c[d] as i64);
            }
        }
        for d in (0..nd).rev() {
            c[d] += 1;
            if c[d] < m.shape()[d] {
                break;
            }
            c[d] = 0;
        }
    }
    Ok(coords
        .into_iter()
        .map(|v| Tensor::from_vec(v, &[cnt]))
        .collect())
}

/// Check and normalise an index tensor against a dim of `size`.
fn norm_indices(t: &Tensor, dim: usize, size: usize) -> Result<Tensor> {
    if t.dtype() != DType::I64 {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "tensors used as indices must be int64 or bool, got {}",
                t.dtype().name()
            ),
        ));
    }
    let n = size as i64;
    let mut v = t.to_vec::<i64>()?;
    for x in v.iter_mut() {
        let i = if *x < 0 { *x + n } else { *x };
        if i < 0 || i >= n {
            return Err(index_err(format!(
                "index {x} is out of bounds for dimension {dim} with size {size}"
            )));
        }
        *x = i;
    }
    Ok(Tensor::from_vec(v, t.shape()))
}

impl Tensor {
    fn resolve(&self, idx: &[TensorIndex]) -> Result<Resolved> {
        let nd = self.ndim();
        let consumed = dims_consumed(idx)?;
        if consumed > nd {
            return Err(index_err(format!(
                "too many indices for tensor of dimension {nd}"
            )));
        }
        let (sh, st) = (self.shape(), self.strides());
        let mut shape: Dims = SmallVec::new();
        let mut strides: Dims = SmallVec::new();
        let mut offset = self.offset();
        let mut adv: Vec<(usize, Tensor)> = Vec::new();
        let mut src = 0usize;
        for i in idx {
            match i {
                TensorIndex::Int(k) => {
                    let size = sh[src];
                    let j = if *k < 0 { *k + size as i64 } else { *k };
                    if j < 0 || j >= size as i64 {
                        return Err(index_err(format!(
                            "index {k} is out of bounds for dimension {src} with size {size}"
                        )));
                    }
                    offset += j as usize * st[src];
                    src += 1;
                }
                TensorIndex::Slice { start, stop, step } => {
                    let step = step.unwrap_or(1);
                    if step <= 0 {
                        return Err(err(
                            ErrorKind::ValueError,
                            "slice step must be greater than zero",
                        ));
                    }
                    let (s, len) = slice_bounds(*start, *stop, step, sh[src]);
                    if len > 0 {
                        offset += s * st[src];
                    }
                    shape.push(len);
                    strides.push(st[src] * step as usize);
                    src += 1;
                }
                TensorIndex::NewAxis => {
                    shape.push(1);
                    strides.push(0);
                }
                TensorIndex::Ellipsis => {
                    for _ in 0..nd - consumed {
                        shape.push(sh[src]);
                        strides.push(st[src]);
                        src += 1;
                    }
                }
                TensorIndex::Indices(t) if t.dtype() == DType::Bool => {
                    return self.resolve(&swap_mask(idx));
                }
                TensorIndex::Indices(t) => {
                    adv.push((shape.len(), norm_indices(t, src, sh[src])?));
                    shape.push(sh[src]);
                    strides.push(st[src]);
                    src += 1;
                }
                TensorIndex::Mask(m) => {
                    let k = m.ndim();
                    if m.dtype() != DType::Bool {
                        return Err(err(
                            ErrorKind::TypeError,
                            "a mask index must be a bool tensor",
                        ));
                    }
                    if m.shape() != &sh[src..src + k] {
                        return Err(index_err(format!(
                            "the shape of the mask {} at index {src} does not match the shape of \
                             the indexed tensor {}",
                            fmt_shape(m.shape()),
                            fmt_shape(&sh[src..src + k])
                        )));
                    }
                    for c in nonzero(m)? {
                        adv.push((shape.len(), c));
                        shape.push(sh[src]);
                        strides.push(st[src]);
                        src += 1;
                    }
                }
            }
        }
        while src < nd {
            shape.push(sh[src]);
            strides.push(st[src]);
            src += 1;
        }
        let view = self.view_with(shape, strides, offset);
        if adv.is_empty() {
            return Ok(Resolved::View(view));
        }
        advanced(view, adv)
    }

    /// `x[idx]`: a view for basic indexing, a copy with advanced indices.
    pub fn index(&self, idx: &[TensorIndex]) -> Result<Tensor> {
        let (ir, tensors) = trace::index_op(idx);
        let mut args: Vec<&Tensor> = vec![self];
        args.extend(tensors.iter());
        record_op(&args, |_| ir, || self.index_eager(idx))
    }

    fn index_eager(&self, idx: &[TensorIndex]) -> Result<Tensor> {
        let out = match self.resolve(idx)? {
            Resolved::View(v) => {
                v.mark_view_of(self);
                v
            }
            Resolved::Gather {
                base,
                offsets,
                shape,
            } => take(&base, &offsets, &shape)?,
        };
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a_shape: self.shape().into(),
                more: More::Index(idx.to_vec()),
                ..OpSaved::default()
            };
            let op = IrOp::Index {
                indices: trace::ir_indices(idx),
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `x[idx] = value` (or `+=` when `accumulate`) in place, without autograd.
    pub(crate) fn index_put_raw(
        &self,
        idx: &[TensorIndex],
        value: &Tensor,
        accumulate: bool,
    ) -> Result<()> {
        let resolved = self.resolve(idx)?;
        let shape = match &resolved {
            Resolved::View(v) => Dims::from(v.shape()),
            Resolved::Gather { shape, .. } => shape.clone(),
        };
        let vals = value.expand_raw(&shape).map_err(|_| {
            err(
                ErrorKind::ShapeError,
                format!(
                    "index_put: shape mismatch: value tensor of shape {} cannot be broadcast to \
                     indexing result of shape {}",
                    fmt_shape(value.shape()),
                    fmt_shape(&shape)
                ),
            )
        })?;
        let at = match &resolved {
            Resolved::View(v) => Targets::View(v),
            Resolved::Gather { offsets, .. } => Targets::Offsets(offsets),
        };
        put(self, at, &vals, accumulate)
    }

    /// `x[idx] = value` in place (bumps the version). Under grad mode, a non-leaf or a
    /// value requiring grad records an `IndexPut` node on `x`.
    pub fn index_put_(&self, idx: &[TensorIndex], value: &Tensor) -> Result<()> {
        trace::graph_break(trace::BreakReason::InPlace("index_put_"));
        trace::refuse_effect("an in-place op")?;
        let grad = autograd::needs_grad(&[self, value]);
        if grad {
            self.check_inplace()?;
        }
        self.index_put_raw(idx, value, false)?;
        if grad {
            let node = BackwardOp::IndexPut {
                indices: idx.to_vec(),
                value_shape: value.shape().into(),
                accumulate: false,
            };
            let edges = [Edge::of(self), Edge::of(value)].into();
            self.rebase_history(Some(autograd::new_node(node, edges)))?;
        }
        Ok(())
    }

    /// `x[idx] = s` with a Rust scalar.
    /// The scalar is made in x's dtype (a float64 tensor keeps all of a float's bits).
    pub fn index_put_scalar_(&self, idx: &[TensorIndex], s: Scalar) -> Result<()> {
        self.index_put_(idx, &creation::full(&[], s, Some(self.dtype()))?)
    }

    /// `index_select(dim, index)` with a 1-D int64 index.
    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::IndexSelect {
            dim: trace::dim(dim, self.ndim()),
        };
        record_op(&[self, index], ir, || self.index_select_eager(dim, index))
    }

    fn index_select_eager(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let d = norm_dim("index_select", dim, self.ndim())?;
        if index.ndim() > 1 {
            return Err(err(
                ErrorKind::ShapeError,
                "index_select: index must be 1-D",
            ));
        }
        if index.dtype() == DType::I64 {
            // as PyTorch: no wrapping of negative indices here (unlike `x[idx]`)
            let size = self.shape()[d] as i64;
            if let Some(i) = index
                .to_vec::<i64>()?
                .into_iter()
                .find(|&i| i < 0 || i >= size)
            {
                return Err(err(
                    ErrorKind::IndexError,
                    format!("index {i} is out of bounds for dimension {d} with size {size}"),
                ));
            }
        }
        let mut idx = vec![TensorIndex::full(); d];
        // A 1-D index as given: a capture knows this handle, so the backward (which
        // reads it) is recorded; a 0-d one is reshaped.
        let flat = if index.ndim() == 1 {
            index.clone()
        } else {
            index.reshape_raw(&[index.numel()])?
        };
        idx.push(TensorIndex::Indices(flat));
        let since = crate::autograd::next_node_id();
        let out = self.index(&idx)?;
        crate::autograd::names::name_composite(&out, since, "IndexSelectBackward0");
        Ok(out)
    }

    /// `gather(dim, index)`: `out[i][j] = x[index[i][j]][j]` (dim 0).
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Gather {
            dim: trace::dim(dim, self.ndim()),
        };
        record_op(&[self, index], ir, || self.gather_eager(dim, index))
    }

    fn gather_eager(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let d = norm_dim("gather", dim, self.ndim())?;
        check_dim_index("gather", self, index, d)?;
        let offs = dim_offsets(
            "gather",
            self.shape(),
            self.strides(),
            self.offset(),
            index,
            d,
        )?;
        let out = take(self, &offs, index.shape())?;
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a_shape: self.shape().into(),
                aux: Some(index.clone()),
                src: trace::active().then(|| self.clone()),
                ..OpSaved::default()
            };
            let node = BackwardOp::Op {
                op: IrOp::Gather { dim: d },
                saved,
            };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `scatter_add(dim, index, src)`: a copy of x with `src` added at `index` along dim.
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::ScatterAdd {
            dim: trace::dim(dim, self.ndim()),
        };
        record_op(&[self, index, src], ir, || {
            self.scatter_add_eager(dim, index, src, true)
        })
    }

    /// `scatter(dim, index, src)` with a tensor `src`: a copy of x with `src` written at
    /// `index` along dim, the last write standing where indices repeat (torch's CPU
    /// kernel); the gradients are scatter_add's (src gathers the gradient at every index,
    /// as torch's backward). Captured as `IrOp::Scatter`.
    pub fn scatter_overwrite(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Scatter {
            dim: trace::dim(dim, self.ndim()),
        };
        record_op(&[self, index, src], ir, || {
            self.scatter_add_eager(dim, index, src, false)
        })
    }

    fn scatter_add_eager(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        let d = norm_dim("scatter_add", dim, self.ndim())?;
        check_dim_index("scatter_add", self, index, d)?;
        let src_c = src.cast(self.dtype())?;
        let src_part = src_c.index(
            &index
                .shape()
                .iter()
                .map(|&n| TensorIndex::Slice {
                    start: None,
                    stop: Some(n as i64),
                    step: None,
                })
                .collect::<Vec<_>>(),
        )?;
        if src_part.shape() != index.shape() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "scatter_add: src of shape {} is smaller than index of shape {}",
                    fmt_shape(src.shape()),
                    fmt_shape(index.shape())
                ),
            ));
        }
        let out = self.contiguous_copy()?;
        let offs = dim_offsets("scatter_add", out.shape(), out.strides(), 0, index, d)?;
        put(
            &out,
            Targets::Offsets(&offs),
            &src_part.detach(),
            accumulate,
        )?;
        if out.dtype().is_float() && autograd::needs_grad(&[self, src]) {
            let saved = OpSaved {
                a_shape: self.shape().into(),
                b_shape: src.shape().into(),
                aux: Some(index.clone()),
                ..OpSaved::default()
            };
            let node = BackwardOp::Op {
                op: IrOp::ScatterAdd { dim: d },
                saved,
            };
            autograd::record(&out, node, &[self, src]);
        }
        Ok(out)
    }

    /// `masked_fill(mask, value)`: `value` where `mask` (broadcast to x's shape).
    pub fn masked_fill(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        record_op(
            &[self, mask],
            |_| IrOp::MaskedFill { value },
            || self.masked_fill_eager(mask, value),
        )
    }

    fn masked_fill_eager(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(err(
                ErrorKind::TypeError,
                "masked_fill: mask must be a bool tensor",
            ));
        }
        let shape = broadcast_shapes("masked_fill", self.shape(), mask.shape())?;
        if shape.as_slice() != self.shape() {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "masked_fill: mask of shape {} does not broadcast to the tensor's shape {}",
                    fmt_shape(mask.shape()),
                    fmt_shape(self.shape())
                ),
            ));
        }
        // one pass: each element is x or the value (the value cast as a 0-d tensor is)
        let fill = Tensor::scalar(value).cast(self.dtype())?;
        let out = with_elem!(self.dtype(), T => {
            let v = fill.read(|s: &[T]| s.first().copied())?.ok_or_else(|| {
                err(ErrorKind::RuntimeError, "internal: masked_fill's value")
            })?;
            elementwise::zip(self, mask, self.shape(), move |x: T, m: bool| {
                if m { v } else { x }
            })?
        });
        if out.dtype().is_float() && autograd::needs_grad(&[self]) {
            // The mask as given (the rule broadcasts it again): a capture knows this
            // handle, so the backward is recorded (the expanded one has no IR node).
            let saved = OpSaved {
                a_shape: self.shape().into(),
                aux: Some(mask.clone()),
                ..OpSaved::default()
            };
            let node = BackwardOp::Op {
                op: IrOp::MaskedFill { value },
                saved,
            };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }
}

/// Rewrite bool `Indices` entries as `Mask` entries.
fn swap_mask(idx: &[TensorIndex]) -> Vec<TensorIndex> {
    idx.iter()
        .map(|i| match i {
            TensorIndex::Indices(t) if t.dtype() == DType::Bool => TensorIndex::Mask(t.clone()),
            other => other.clone(),
        })
        .collect()
}

fn check_dim_index(op: &str, x: &Tensor, index: &Tensor, d: usize) -> Result<()> {
    let ok = index.dtype() == DType::I64
        && index.ndim() == x.ndim()
        && (0..x.ndim()).all(|i| i == d || index.shape()[i] <= x.shape()[i]);
    if ok {
        return Ok(());
    }
    Err(err(
        ErrorKind::ShapeError,
        format!(
            "{op}: index of shape {} ({}) does not fit input of shape {} along dim {d}",
            fmt_shape(index.shape()),
            index.dtype().name(),
            fmt_shape(x.shape())
        ),
    ))
}

/// Advanced indexing over a basic view: broadcast the index tensors and compute the
/// storage offset of every result element.
fn advanced(view: Tensor, adv: Vec<(usize, Tensor)>) -> Result<Resolved> {
    let mut bshape: Dims = SmallVec::new();
    for (_, t) in &adv {
        bshape = broadcast_shapes("index", &bshape, t.shape()).map_err(|_| {
            index_err("shape mismatch: indexing tensors could not be broadcast together".into())
        })?;
    }
    let nb: usize = bshape.iter().product();
    let mut adv_off = vec![0usize; nb];
    for (dim, t) in &adv {
        let st = view.strides()[*dim];
        let vals = t.expand_raw(&bshape)?.to_vec::<i64>()?;
        for (o, &v) in adv_off.iter_mut().zip(vals.iter()) {
            *o += v as usize * st;
        }
    }
    let dims: Vec<usize> = adv.iter().map(|(d, _)| *d).collect();
    let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
    let first = dims.first().copied().unwrap_or(0);
    let rest: Vec<usize> = (0..view.ndim()).filter(|d| !dims.contains(d)).collect();
    let (outer, inner): (Vec<usize>, Vec<usize>) = if adjacent {
        rest.iter().partition(|&&d| d < first)
    } else {
        (Vec::new(), rest)
    };
    let pick = |ds: &[usize]| -> (Dims, Dims) {
        (
            ds.iter().map(|&d| view.shape()[d]).collect(),
            ds.iter().map(|&d| view.strides()[d]).collect(),
        )
    };
    let (osh, ost) = pick(&outer);
    let (ish, ist) = pick(&inner);
    let mut inner_off = Vec::new();
    for_each_offset(&ish, &ist, 0, |o| inner_off.push(o));
    let total = osh.iter().product::<usize>() * nb * inner_off.len();
    let mut offsets = crate::tensor::storage::alloc_offsets(total)?;
    for_each_offset(&osh, &ost, view.offset(), |o| {
        for &a in &adv_off {
            for &i in &inner_off {
                offsets.push(o + a + i);
            }
        }
    });
    let mut shape = osh;
    shape.extend(bshape.iter().copied());
    shape.extend(ish.iter().copied());
    Ok(Resolved::Gather {
        base: view,
        offsets,
        shape,
    })
}

/// `one_hot(t, num_classes=-1)`: int64 of shape `t.shape + (C,)`.
pub fn one_hot(t: &Tensor, num_classes: i64) -> Result<Tensor> {
    let ir = |out: &Tensor| IrOp::OneHot {
        num_classes: out.shape().last().copied().unwrap_or(0),
    };
    record_op(&[t], ir, || one_hot_eager(t, num_classes))
}

fn one_hot_eager(t: &Tensor, num_classes: i64) -> Result<Tensor> {
    if t.dtype() != DType::I64 {
        return Err(err(
            ErrorKind::TypeError,
            "one_hot: input must be an int64 tensor",
        ));
    }
    let v = t.to_vec::<i64>()?;
    let c = if num_classes < 0 {
        v.iter().copied().max().map_or(0, |m| m + 1)
    } else {
        num_classes
    };
    if let Some(&bad) = v.iter().find(|&&x| x < 0 || x >= c) {
        return Err(err(
            ErrorKind::ValueError,
            format!("one_hot: class value {bad} is out of range for {c} classes"),
        ));
    }
    let mut shape: Vec<usize> = t.shape().to_vec();
    shape.push(c as usize);
    let out = creation::zeros(&shape, DType::I64)?;
    let offs: Vec<usize> = v
        .iter()
        .enumerate()
        .map(|(i, &x)| i * c as usize + x as usize)
        .collect();
    put(
        &out,
        Targets::Offsets(&offs),
        &Tensor::scalar(Scalar::Int(1)).expand_raw(&[offs.len()])?,
        false,
    )?;
    Ok(out)
}
