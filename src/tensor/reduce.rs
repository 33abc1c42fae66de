//! Reductions (`sum mean max min argmax argmin var std prod logsumexp all any norm`)
//! and dim-wise ops (`softmax log_softmax cumsum`), with keepdim and autograd.

use super::dtype::{float_for, with_elem, with_float, DType, Elem, Real};
use super::kernels::reduce::{
    arg_extreme, col_sums, log_softmax_row, logsumexp_row, per_row, rows, scan_rows, softmax_row,
    sum_f32,
};
use super::shape::{norm_dim, norm_dims, Dims};
use super::{err, Tensor};
use crate::autograd::{self, BackwardOp, OpSaved, Saved};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::IrOp;

/// The output shape of a reduction over `dims`.
pub fn reduced_shape(shape: &[usize], dims: &[usize], keepdim: bool) -> Dims {
    let mut out = Dims::new();
    for (i, &s) in shape.iter().enumerate() {
        if dims.contains(&i) {
            if keepdim {
                out.push(1);
            }
        } else {
            out.push(s);
        }
    }
    out
}

fn outer(shape: &[usize], dims: &[usize]) -> usize {
    (0..shape.len())
        .filter(|d| !dims.contains(d))
        .map(|d| shape[d])
        .product()
}

fn float_only(op: &str, x: &Tensor) -> Result<()> {
    if x.dtype().is_float() {
        return Ok(());
    }
    Err(err(
        ErrorKind::TypeError,
        format!(
            "{op}: expected a float32 tensor, got {} (use .float())",
            x.dtype().name()
        ),
    ))
}

/// `reduce_float!(x, dims, keepdim, |r| e)`: reduce the rows of `x` with `e`, written
/// once and compiled for f64 rows (float64 input) and f32 rows (float32, ints, bools).
macro_rules! reduce_float {
    ($x:expr, $d:expr, $keep:expr, move |$r:ident| $e:expr) => {
        with_float!(float_for($x.dtype()), T => $x.reduce_rows::<T>($d, $keep, move |$r: &[T]| -> T { $e }))
    };
    ($x:expr, $d:expr, $keep:expr, |$r:ident| $e:expr) => {
        with_float!(float_for($x.dtype()), T => $x.reduce_rows::<T>($d, $keep, |$r: &[T]| -> T { $e }))
    };
}

impl Tensor {
    /// Reduces each row with `f` in the float type `T` (the input cast to it).
    fn reduce_rows<T: Elem>(
        &self,
        dims: &[usize],
        keepdim: bool,
        f: impl Fn(&[T]) -> T + Sync + Send,
    ) -> Result<Tensor> {
        let n_rows = outer(self.shape(), dims);
        let out = if let Some(k) = self.in_place_rows(T::DTYPE, dims) {
            // Contiguous with the reduced dims last: the rows are read where they are.
            let b = self.storage().borrow();
            let data = T::slice(&b).unwrap_or(&[]);
            let data = data.get(self.offset()..self.offset() + self.numel());
            per_row(data.unwrap_or(&[]), n_rows, k, f)?
        } else {
            let (data, k) = rows::<T>(&self.cast(T::DTYPE)?, dims)?;
            per_row(&data, n_rows, k, f)?
        };
        Ok(Tensor::from_vec(
            out,
            &reduced_shape(self.shape(), dims, keepdim),
        ))
    }

    /// The row length when the rows over `dims` lie in place in the storage: a
    /// contiguous tensor of dtype `dt` whose reduced dims are its last ones.
    fn in_place_rows(&self, dt: DType, dims: &[usize]) -> Option<usize> {
        let nd = self.ndim();
        let suffix = dims
            .iter()
            .enumerate()
            .all(|(i, &d)| d == nd - dims.len() + i);
        let k: usize = dims.iter().map(|&d| self.shape()[d]).product();
        (self.dtype() == dt && self.is_contiguous() && suffix && k > 0).then_some(k)
    }

    /// f64 sums over the leading dims `dims` (`0..p`, `p < ndim`) of a contiguous
    /// float tensor, one per trailing position (`None` for other cases): the reduced
    /// rows are summed in place in row order, the same sequential f64 sum `sum_f32`
    /// gives a reduced row shorter than `PAR_THRESHOLD`, without moving the reduced
    /// dims last first (a bias gradient's `sum` over batch and time).
    fn lead_sums(&self, dims: &[usize]) -> Option<Vec<f64>> {
        let p = dims.len();
        let lead = dims.iter().enumerate().all(|(i, &d)| d == i);
        if p == 0 || p >= self.ndim() || !lead || !self.is_contiguous() {
            return None;
        }
        let n: usize = self.shape()[..p].iter().product();
        let cols: usize = self.shape()[p..].iter().product();
        if n == 0 || cols == 0 || n >= super::kernels::PAR_THRESHOLD {
            return None;
        }
        let b = self.storage().borrow();
        let sums = match self.dtype() {
            DType::F32 => col_sums(f32::slice(&b)?.get(self.offset()..)?, n, cols),
            DType::F64 => col_sums(f64::slice(&b)?.get(self.offset()..)?, n, cols),
            DType::I32 | DType::I64 | DType::U8 | DType::Bool => return None,
        };
        sums
    }

    /// [`Self::lead_sums`] as a tensor of this dtype, each sum divided by `divisor`.
    fn lead_reduce(&self, dims: &[usize], keepdim: bool, divisor: f64) -> Option<Tensor> {
        let sums = self.lead_sums(dims)?;
        let shape = reduced_shape(self.shape(), dims, keepdim);
        Some(with_float!(self.dtype(), T => Tensor::from_vec(
            sums.into_iter().map(|s| T::from_f64(s / divisor)).collect::<Vec<T>>(),
            &shape,
        )))
    }

    /// `sum(dim, keepdim)`; `dims` empty = all. Ints and bools sum to int64.
    pub fn sum(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Sum {
            dims: trace::dims(dims, self.ndim()),
            keepdim,
        };
        record_op(&[self], ir, || self.sum_eager(dims, keepdim))
    }

    fn sum_eager(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let d = norm_dims("sum", dims, self.ndim())?;
        let out = if let Some(out) = self.broadcast_sum(&d, keepdim)? {
            out
        } else if let Some(out) = self.lead_reduce(&d, keepdim, 1.0) {
            out
        } else if self.dtype().is_float() {
            reduce_float!(self, &d, keepdim, |r| sum_f32(r) as T)?
        } else {
            let (data, k) = rows::<i64>(&self.cast(DType::I64)?, &d)?;
            let v = per_row(&data, outer(self.shape(), &d), k, |r| {
                r.iter().fold(0i64, |a, &b| a.wrapping_add(b))
            })?;
            Tensor::from_vec(v, &reduced_shape(self.shape(), &d, keepdim))
        };
        self.record_sum(&out, d, keepdim, 1);
        Ok(out)
    }

    /// A float32 sum over dims that are all broadcast (stride 0, as in the expanded
    /// gradient of a `sum()`): each output adds n copies of one value, whose f64 sum (as
    /// `sum_f32` adds) is exactly `n * v` for n < 2^29, so the product gives the summing
    /// kernel's number without reading (or first copying) the n copies.
    fn broadcast_sum(&self, d: &[usize], keepdim: bool) -> Result<Option<Tensor>> {
        let n: usize = d.iter().map(|&i| self.shape()[i]).product();
        let broadcast = !d.is_empty() && d.iter().all(|&i| self.strides()[i] == 0);
        if self.dtype() != DType::F32 || !broadcast || n == 0 || n >= 1 << 29 {
            return Ok(None);
        }
        let mut one: Dims = self.shape().into();
        for &i in d {
            one[i] = 1;
        }
        let base = self.view_with(one, self.strides().into(), self.offset());
        let vals = base.to_f32_vec()?;
        let vals = vals.into_iter().map(|v| (f64::from(v) * n as f64) as f32);
        let shape = reduced_shape(self.shape(), d, keepdim);
        super::creation::from_f32(vals.collect(), &shape).map(Some)
    }

    fn record_sum(&self, out: &Tensor, dims: Vec<usize>, keepdim: bool, divisor: usize) {
        if out.dtype().is_float() && autograd::needs_grad(&[self]) {
            // a mean over one element is named as a sum, as before
            let op = if divisor == 1 {
                IrOp::Sum { dims, keepdim }
            } else {
                IrOp::Mean { dims, keepdim }
            };
            let saved = OpSaved {
                a_shape: self.shape().into(),
                src: trace::active().then(|| self.clone()),
                ..OpSaved::default()
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(out, node, &[self]);
        }
    }

    /// `mean(dim, keepdim)` (float tensors).
    pub fn mean(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Mean {
            dims: trace::dims(dims, self.ndim()),
            keepdim,
        };
        record_op(&[self], ir, || self.mean_eager(dims, keepdim))
    }

    fn mean_eager(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        float_only("mean", self)?;
        let d = norm_dims("mean", dims, self.ndim())?;
        let n: usize = d.iter().map(|&i| self.shape()[i]).product();
        let out = match self.lead_reduce(&d, keepdim, n as f64) {
            Some(out) => out,
            None => reduce_float!(self, &d, keepdim, |r| (sum_f32(r) / r.len() as f64) as T)?,
        };
        self.record_sum(&out, d, keepdim, n);
        Ok(out)
    }

    /// `max(dim, keepdim)` / `min(...)` -> (values, indices int64).
    pub fn extreme_dim(&self, dim: i64, keepdim: bool, is_min: bool) -> Result<(Tensor, Tensor)> {
        let sc = trace::scope();
        let (values, index) = self.extreme_dim_eager(dim, keepdim, is_min)?;
        let d = trace::dim(dim, self.ndim());
        let ir = || IrOp::ExtremeDim {
            dim: d,
            keepdim,
            is_min,
        };
        sc.record(ir, &[self], &values);
        let ir = || IrOp::ArgExtreme {
            dim: Some(d),
            keepdim,
            is_min,
        };
        sc.record(ir, &[self], &index);
        Ok((values, index))
    }

    fn extreme_dim_eager(&self, dim: i64, keepdim: bool, is_min: bool) -> Result<(Tensor, Tensor)> {
        let op = if is_min { "min" } else { "max" };
        let d = norm_dim(op, dim, self.ndim())?;
        let dims = if self.ndim() == 0 { vec![] } else { vec![d] };
        if dims.iter().any(|&i| self.shape()[i] == 0) {
            return Err(err(
                ErrorKind::IndexError,
                format!("{op}: cannot reduce over an empty dimension"),
            ));
        }
        let oshape = reduced_shape(self.shape(), &dims, keepdim);
        let idx = self.arg_rows(&dims, is_min)?;
        let index = Tensor::from_vec(idx, &oshape);
        // the value at the index, as PyTorch: a row of -0.0 and 0.0 gives its first zero
        let values = self.gather_rows(&dims, &index)?;
        if values.dtype().is_float() && autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a_shape: self.shape().into(),
                aux: Some(index.clone()),
                src: trace::active().then(|| self.clone()),
                ..OpSaved::default()
            };
            let op = IrOp::ExtremeDim {
                dim: d,
                keepdim,
                is_min,
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&values, node, &[self]);
        }
        Ok((values, index))
    }

    fn arg_rows(&self, dims: &[usize], is_min: bool) -> Result<Vec<i64>> {
        let n = outer(self.shape(), dims);
        match self.dtype() {
            DType::F32 => {
                let (data, k) = rows::<f32>(self, dims)?;
                per_row(&data, n, k, |r| arg_extreme(r, is_min))
            }
            DType::F64 => {
                let (data, k) = rows::<f64>(self, dims)?;
                per_row(&data, n, k, |r| arg_extreme(r, is_min))
            }
            DType::I32 | DType::I64 | DType::U8 | DType::Bool => {
                let (data, k) = rows::<i64>(&self.cast(DType::I64)?, dims)?;
                per_row(&data, n, k, |r| arg_extreme(r, is_min))
            }
        }
    }

    /// The max/min of each row of a float tensor (None for other dtypes), shaped
    /// `shape` (`max()`/`min()` of every element): IEEE 754-2019 maximum/minimum, NaN
    /// propagating and -0.0 < 0.0, the fold a compiled reduction does in any lane order.
    /// (PyTorch's sign for a zero result of elements holding both zeros follows its
    /// vector loop's blocks, not the values: tests/refs/extreme_zeros_ref.py.)
    fn float_extremes(
        &self,
        dims: &[usize],
        shape: &[usize],
        is_min: bool,
    ) -> Result<Option<Tensor>> {
        use super::kernels::binary::{fmax_nan, fmax_nan64, fmin_nan, fmin_nan64};
        let n = outer(self.shape(), dims);
        match self.dtype() {
            DType::F32 => {
                let (data, k) = rows::<f32>(self, dims)?;
                let pick = if is_min { fmin_nan } else { fmax_nan };
                let v = per_row(&data, n, k, |r| {
                    r.iter().copied().reduce(pick).unwrap_or(f32::NAN)
                })?;
                Ok(Some(Tensor::from_vec(v, shape)))
            }
            DType::F64 => {
                let (data, k) = rows::<f64>(self, dims)?;
                let pick = if is_min { fmin_nan64 } else { fmax_nan64 };
                let v = per_row(&data, n, k, |r| {
                    r.iter().copied().reduce(pick).unwrap_or(f64::NAN)
                })?;
                Ok(Some(Tensor::from_vec(v, shape)))
            }
            DType::I32 | DType::I64 | DType::U8 | DType::Bool => Ok(None),
        }
    }

    /// The values at row-wise `index` (the same layout as `arg_rows`).
    fn gather_rows(&self, dims: &[usize], index: &Tensor) -> Result<Tensor> {
        fn go<T: Elem>(x: &Tensor, dims: &[usize], idx: &[i64], shape: &[usize]) -> Result<Tensor> {
            let (data, k) = rows::<T>(x, dims)?;
            let v: Vec<T> = idx
                .iter()
                .enumerate()
                .map(|(r, &i)| data.get(r * k + i as usize).copied().unwrap_or(T::zero()))
                .collect();
            Ok(Tensor::from_vec(v, shape))
        }
        let idx = index.to_vec::<i64>()?;
        with_elem!(self.dtype(), T => go::<T>(self, dims, &idx, index.shape()))
    }

    /// `max()` / `min()` over all elements.
    pub fn extreme_all(&self, is_min: bool) -> Result<Tensor> {
        record_op(
            &[self],
            |_| IrOp::ExtremeAll { is_min },
            || self.extreme_all_eager(is_min),
        )
    }

    fn extreme_all_eager(&self, is_min: bool) -> Result<Tensor> {
        let op = if is_min { "min" } else { "max" };
        if self.numel() == 0 {
            return Err(err(
                ErrorKind::RuntimeError,
                format!("{op}: reduction of an empty tensor"),
            ));
        }
        let all: Vec<usize> = (0..self.ndim()).collect();
        let out = match self.float_extremes(&all, &[], is_min)? {
            Some(v) => v,
            None => {
                let idx = Tensor::from_vec(self.arg_rows(&all, is_min)?, &[]);
                self.gather_rows(&all, &idx)?
            }
        };
        if out.dtype().is_float() && autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a: Some(Saved::new(self)),
                out: Some(Saved::output(&out)),
                ..OpSaved::default()
            };
            let node = BackwardOp::Op {
                op: IrOp::ExtremeAll { is_min },
                saved,
            };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `argmax(dim=None, keepdim)` / `argmin`: flat index when `dim` is None.
    pub fn arg_extreme(&self, dim: Option<i64>, keepdim: bool, is_min: bool) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::ArgExtreme {
            dim: dim.map(|d| trace::dim(d, self.ndim())),
            keepdim,
            is_min,
        };
        record_op(&[self], ir, || self.arg_extreme_eager(dim, keepdim, is_min))
    }

    fn arg_extreme_eager(&self, dim: Option<i64>, keepdim: bool, is_min: bool) -> Result<Tensor> {
        match dim {
            Some(d) => Ok(self.extreme_dim(d, keepdim, is_min)?.1),
            None => {
                let flat = self.reshape_raw(&[self.numel()])?;
                if self.numel() == 0 {
                    return Err(err(ErrorKind::RuntimeError, "argmax: empty tensor"));
                }
                Ok(Tensor::from_vec(flat.arg_rows(&[0], is_min)?, &[]))
            }
        }
    }

    /// `var(dim, correction=1, keepdim)`; `std` when `take_sqrt`.
    pub fn var_std(
        &self,
        dims: &[i64],
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
    ) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Var {
            dims: trace::dims(dims, self.ndim()),
            correction,
            keepdim,
            std: take_sqrt,
        };
        record_op(&[self], ir, || {
            self.var_std_eager(dims, correction, keepdim, take_sqrt)
        })
    }

    fn var_std_eager(
        &self,
        dims: &[i64],
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
    ) -> Result<Tensor> {
        float_only("var", self)?;
        let d = norm_dims("var", dims, self.ndim())?;
        let out = reduce_float!(self, &d, keepdim, move |r| {
            let n = r.len() as f64;
            let mean = sum_f32(r) / n;
            let ss: f64 = r.iter().map(|&v| (v.to_f64() - mean).powi(2)).sum();
            let v = ss / (n - correction).max(0.0);
            (if take_sqrt { v.sqrt() } else { v }) as T
        })?;
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a: Some(Saved::new(self)),
                out: take_sqrt.then(|| Saved::output(&out)),
                ..OpSaved::default()
            };
            let op = IrOp::Var {
                dims: d,
                correction,
                keepdim,
                std: take_sqrt,
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `prod(dim, keepdim)`.
    pub fn prod(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Prod {
            dims: trace::dims(dims, self.ndim()),
            keepdim,
        };
        record_op(&[self], ir, || self.prod_eager(dims, keepdim))
    }

    fn prod_eager(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let d = norm_dims("prod", dims, self.ndim())?;
        let out = if self.dtype().is_float() {
            reduce_float!(self, &d, keepdim, |r| r.iter().product())?
        } else {
            let (data, k) = rows::<i64>(&self.cast(DType::I64)?, &d)?;
            let v = per_row(&data, outer(self.shape(), &d), k, |r| {
                r.iter().fold(1i64, |a, &b| a.wrapping_mul(b))
            })?;
            Tensor::from_vec(v, &reduced_shape(self.shape(), &d, keepdim))
        };
        if out.dtype().is_float() && autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a: Some(Saved::new(self)),
                ..OpSaved::default()
            };
            let op = IrOp::Prod { dims: d, keepdim };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `logsumexp(dim, keepdim)`.
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::LogSumExp {
            dims: trace::dims(dims, self.ndim()),
            keepdim,
        };
        record_op(&[self], ir, || self.logsumexp_eager(dims, keepdim))
    }

    fn logsumexp_eager(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let x = self.cast(float_for(self.dtype()))?;
        let d = norm_dims("logsumexp", dims, self.ndim())?;
        let out = reduce_float!(x, &d, keepdim, |r| logsumexp_row(r))?;
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a: Some(Saved::new(self)),
                out: Some(Saved::output(&out)),
                ..OpSaved::default()
            };
            let op = IrOp::LogSumExp { dims: d, keepdim };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `norm(p=2, dim, keepdim)`: (sum |x|^p)^(1/p); p = inf gives max |x|.
    pub fn norm(&self, p: f64, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Norm {
            p,
            dims: trace::dims(dims, self.ndim()),
            keepdim,
        };
        record_op(&[self], ir, || self.norm_eager(p, dims, keepdim))
    }

    fn norm_eager(&self, p: f64, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        float_only("norm", self)?;
        let d = norm_dims("norm", dims, self.ndim())?;
        let out = reduce_float!(self, &d, keepdim, move |r| {
            if p.is_infinite() {
                return r.iter().fold(0.0, |a: T, &b| a.max(b.abs()));
            }
            let s: f64 = r.iter().map(|&v| v.abs().to_f64().powf(p)).sum();
            s.powf(1.0 / p) as T
        })?;
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                a: Some(Saved::new(self)),
                out: Some(Saved::output(&out)),
                ..OpSaved::default()
            };
            let op = IrOp::Norm {
                p,
                dims: d,
                keepdim,
            };
            let node = BackwardOp::Op { op, saved };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `all(dim)` / `any(dim)` (bool result); `dims` empty = all elements.
    pub fn all_any(&self, dims: &[i64], keepdim: bool, any: bool) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::AllAny {
            dims: trace::dims(dims, self.ndim()),
            keepdim,
            any,
        };
        record_op(&[self], ir, || self.all_any_eager(dims, keepdim, any))
    }

    fn all_any_eager(&self, dims: &[i64], keepdim: bool, any: bool) -> Result<Tensor> {
        let d = norm_dims(if any { "any" } else { "all" }, dims, self.ndim())?;
        let (data, k) = rows::<bool>(&self.cast(DType::Bool)?, &d)?;
        let v = per_row(&data, outer(self.shape(), &d), k, |r| {
            if any {
                r.iter().any(|&b| b)
            } else {
                r.iter().all(|&b| b)
            }
        })?;
        Ok(Tensor::from_vec(
            v,
            &reduced_shape(self.shape(), &d, keepdim),
        ))
    }

    /// Apply a row scan along `dim` and restore the layout.
    pub(crate) fn along_dim<T: Elem>(
        &self,
        dim: usize,
        f: impl Fn(&[T], &mut [T]) + Sync + Send,
    ) -> Result<Tensor> {
        let x = self.cast(T::DTYPE)?;
        if x.ndim() == 0 {
            let v = x.to_vec::<T>()?;
            let mut o = vec![T::zero(); 1];
            f(&v, &mut o);
            return Ok(Tensor::from_vec(o, &[]));
        }
        let (data, k) = rows::<T>(&x, &[dim])?;
        let out = scan_rows(&data, k, f)?;
        let mut moved: Vec<usize> = (0..x.ndim())
            .filter(|&i| i != dim)
            .map(|i| x.shape()[i])
            .collect();
        moved.push(x.shape()[dim]);
        // inverse of "move dim last"
        let nd = x.ndim();
        let perm: Vec<usize> = (0..nd)
            .map(|i| match i.cmp(&dim) {
                std::cmp::Ordering::Less => i,
                std::cmp::Ordering::Equal => nd - 1,
                std::cmp::Ordering::Greater => i - 1,
            })
            .collect();
        Tensor::from_vec(out, &moved)
            .permute_raw(&perm, false)
            .contiguous_copy()
    }

    /// `softmax(dim)`.
    pub fn softmax(&self, dim: i64) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Softmax {
            dim: trace::dim(dim, self.ndim()),
        };
        record_op(&[self], ir, || self.softmax_eager(dim))
    }

    fn softmax_eager(&self, dim: i64) -> Result<Tensor> {
        let d = norm_dim("softmax", dim, self.ndim())?;
        let out = with_float!(float_for(self.dtype()), T => self.along_dim(d, softmax_row::<T>)?);
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                out: Some(Saved::output(&out)),
                ..OpSaved::default()
            };
            let node = BackwardOp::Op {
                op: IrOp::Softmax { dim: d },
                saved,
            };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `log_softmax(dim)`.
    pub fn log_softmax(&self, dim: i64) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::LogSoftmax {
            dim: trace::dim(dim, self.ndim()),
        };
        record_op(&[self], ir, || self.log_softmax_eager(dim))
    }

    fn log_softmax_eager(&self, dim: i64) -> Result<Tensor> {
        let d = norm_dim("log_softmax", dim, self.ndim())?;
        let out =
            with_float!(float_for(self.dtype()), T => self.along_dim(d, log_softmax_row::<T>)?);
        if autograd::needs_grad(&[self]) {
            let saved = OpSaved {
                out: Some(Saved::output(&out)),
                ..OpSaved::default()
            };
            let node = BackwardOp::Op {
                op: IrOp::LogSoftmax { dim: d },
                saved,
            };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// `cumsum(dim)` (float32 result for floats; int64 for ints and bools).
    pub fn cumsum(&self, dim: i64) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Cumsum {
            dim: trace::dim(dim, self.ndim()),
            reverse: false,
        };
        record_op(&[self], ir, || self.cumsum_eager(dim))
    }

    fn cumsum_eager(&self, dim: i64) -> Result<Tensor> {
        let d = norm_dim("cumsum", dim, self.ndim())?;
        let out = self.cumsum_raw(d, false)?;
        if autograd::needs_grad(&[self]) {
            let op = IrOp::Cumsum {
                dim: d,
                reverse: false,
            };
            let node = BackwardOp::Op {
                op,
                saved: OpSaved::default(),
            };
            autograd::record(&out, node, &[self]);
        }
        Ok(out)
    }

    /// Cumulative sum along dim `d` from the end (cumsum's gradient; no autograd of
    /// its own), recorded as `cumsum(reverse=True)` inside a capture.
    pub fn cumsum_reverse(&self, d: usize) -> Result<Tensor> {
        let ir = |_: &Tensor| IrOp::Cumsum {
            dim: d,
            reverse: true,
        };
        record_op(&[self], ir, || self.cumsum_raw(d, true))
    }

    /// Cumulative sum along `dim`, from the end when `reverse`. No autograd.
    pub(crate) fn cumsum_raw(&self, d: usize, reverse: bool) -> Result<Tensor> {
        if self.dtype().is_float() {
            return with_float!(self.dtype(), T => {
                self.along_dim(d, move |r: &[T], o: &mut [T]| {
                    let mut acc = 0.0f64;
                    let n = r.len();
                    for i in 0..n {
                        let j = if reverse { n - 1 - i } else { i };
                        acc += r[j].to_f64();
                        o[j] = acc as T;
                    }
                })
            });
        }
        // ints: exact in i64 (f32 would lose precision)
        let x = self.cast(DType::I64)?;
        let (data, k) = rows::<i64>(&x, &[d.min(x.ndim().saturating_sub(1))])?;
        let out = scan_rows(&data, k.max(1), move |r: &[i64], o: &mut [i64]| {
            let mut acc = 0i64;
            for (y, &v) in o.iter_mut().zip(r) {
                acc = acc.wrapping_add(v);
                *y = acc;
            }
        })?;
        let nd = x.ndim();
        if nd == 0 {
            return Ok(Tensor::from_vec(out, &[]));
        }
        let mut moved: Vec<usize> = (0..nd).filter(|&i| i != d).map(|i| x.shape()[i]).collect();
        moved.push(x.shape()[d]);
        let perm: Vec<usize> = (0..nd)
            .map(|i| {
                if i < d {
                    i
                } else if i == d {
                    nd - 1
                } else {
                    i - 1
                }
            })
            .collect();
        Tensor::from_vec(out, &moved)
            .permute_raw(&perm, false)
            .contiguous_copy()
    }
}
