//! Index kernels: reading a list of storage offsets into a new tensor, writing (or
//! accumulating) values at storage offsets, and the offset computation for
//! `gather` / `scatter_add`.

use super::strided::for_each_offset;
use crate::error::{ErrorKind, Result};
use crate::tensor::dtype::{with_elem, DType, Elem};
use crate::tensor::storage::collect_vec;
use crate::tensor::{err, Tensor};

/// A new contiguous tensor of `shape` with the elements of `src`'s storage at `offsets`.
pub fn take(src: &Tensor, offsets: &[usize], shape: &[usize]) -> Result<Tensor> {
    fn go<T: Elem>(src: &Tensor, offsets: &[usize], shape: &[usize]) -> Result<Tensor> {
        let buf = src.storage().borrow();
        let s =
            T::slice(&buf).ok_or_else(|| err(ErrorKind::RuntimeError, "internal: take dtype"))?;
        let v = collect_vec(offsets.len(), offsets.iter().map(|&o| s[o]))?;
        Ok(Tensor::from_vec(v, shape))
    }
    with_elem!(src.dtype(), T => go::<T>(src, offsets, shape))
}

/// Write `vals` (a tensor of `dst`'s dtype, `offsets.len()` elements row-major) at
/// `offsets` of `dst`'s storage; add instead of overwrite when `accumulate`.
pub fn put(dst: &Tensor, offsets: &[usize], vals: &Tensor, accumulate: bool) -> Result<()> {
    fn go<T: Elem>(
        dst: &Tensor,
        offsets: &[usize],
        vals: &Tensor,
        add: Option<fn(T, T) -> T>,
    ) -> Result<()> {
        let v = vals.to_vec::<T>()?; // materialised first: vals may alias dst
        let mut buf = dst.storage().borrow_mut();
        let d = T::slice_mut(&mut buf)
            .ok_or_else(|| err(ErrorKind::RuntimeError, "internal: put dtype"))?;
        for (&o, &x) in offsets.iter().zip(v.iter()) {
            d[o] = match add {
                Some(f) => f(d[o], x),
                None => x,
            };
        }
        Ok(())
    }
    let vals = vals.cast(dst.dtype())?;
    match dst.dtype() {
        DType::F32 => go::<f32>(dst, offsets, &vals, accumulate.then_some(|a, b| a + b)),
        DType::F64 => go::<f64>(dst, offsets, &vals, accumulate.then_some(|a, b| a + b)),
        DType::I32 => go::<i32>(
            dst,
            offsets,
            &vals,
            accumulate.then_some(|a, b| a.wrapping_add(b)),
        ),
        DType::U8 => go::<u8>(
            dst,
            offsets,
            &vals,
            accumulate.then_some(|a, b| a.wrapping_add(b)),
        ),
        DType::I64 => go::<i64>(
            dst,
            offsets,
            &vals,
            accumulate.then_some(|a, b| a.wrapping_add(b)),
        ),
        DType::Bool => go::<bool>(dst, offsets, &vals, accumulate.then_some(|a, b| a | b)),
    }
}

/// Storage offsets of every element of a view, row-major.
pub fn view_offsets(t: &Tensor) -> Vec<usize> {
    let mut v = Vec::with_capacity(t.numel());
    for_each_offset(t.shape(), t.strides(), t.offset(), |o| v.push(o));
    v
}

/// For `gather`/`scatter_add` along `dim`: the offsets in a tensor of (`shape`,
/// `strides`, `offset`) addressed by each element of `index` (row-major), with the
/// index value replacing the coordinate along `dim`. Bounds-checked.
pub fn dim_offsets(
    op: &str,
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    index: &Tensor,
    dim: usize,
) -> Result<Vec<usize>> {
    let idx = index.to_vec::<i64>()?;
    let ishape = index.shape();
    let nd = ishape.len();
    let mut coord = vec![0usize; nd];
    let mut out = Vec::with_capacity(idx.len());
    let size = shape.get(dim).copied().unwrap_or(1) as i64;
    for &i in &idx {
        // as PyTorch's gather/scatter_add: negative indices are errors, not wrapped
        if i < 0 || i >= size {
            return Err(err(
                ErrorKind::IndexError,
                format!("{op}: index {i} is out of bounds for dimension {dim} with size {size}"),
            ));
        }
        let mut o = offset;
        for (d, &cd) in coord.iter().enumerate() {
            let c = if d == dim { i as usize } else { cd };
            o += c * strides.get(d).copied().unwrap_or(0);
        }
        out.push(o);
        for d in (0..nd).rev() {
            coord[d] += 1;
            if coord[d] < ishape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    Ok(out)
}
