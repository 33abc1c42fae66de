//! Index kernels: reading a list of storage offsets into a new tensor, writing (or
//! accumulating) values at storage offsets, and the offset computation for
//! `gather` / `scatter_add`.

use super::strided::{for_each_offset, view_fits};
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

/// Where [`put`] writes in its destination's storage: at a list of offsets, or at every
/// element of a view of it, row-major (walked run by run along the innermost dim: no
/// offset list, and a unit-stride run is one slice).
#[derive(Clone, Copy)]
pub enum Targets<'a> {
    Offsets(&'a [usize]),
    View(&'a Tensor),
}

/// Write `vals` (one element per target, row-major) at `at` of `dst`'s storage; add
/// instead of overwrite when `accumulate`.
pub fn put(dst: &Tensor, at: Targets, vals: &Tensor, accumulate: bool) -> Result<()> {
    fn go<T: Elem>(
        dst: &Tensor,
        at: Targets,
        vals: &Tensor,
        add: Option<fn(T, T) -> T>,
    ) -> Result<()> {
        let v = vals.to_vec::<T>()?; // materialised first: vals may alias dst
        let mut buf = dst.storage().borrow_mut();
        let d = T::slice_mut(&mut buf)
            .ok_or_else(|| err(ErrorKind::RuntimeError, "internal: put dtype"))?;
        let set = |o: &mut T, x: T| {
            *o = match add {
                Some(f) => f(*o, x),
                None => x,
            }
        };
        match at {
            Targets::Offsets(offsets) => {
                for (&o, &x) in offsets.iter().zip(v.iter()) {
                    set(&mut d[o], x);
                }
            }
            Targets::View(view) => put_runs(d, view, &v, set)?,
        }
        Ok(())
    }
    let vals = vals.cast(dst.dtype())?;
    match dst.dtype() {
        DType::F32 => go::<f32>(dst, at, &vals, accumulate.then_some(|a, b| a + b)),
        DType::F64 => go::<f64>(dst, at, &vals, accumulate.then_some(|a, b| a + b)),
        DType::I32 => go::<i32>(
            dst,
            at,
            &vals,
            accumulate.then_some(|a, b| a.wrapping_add(b)),
        ),
        DType::U8 => go::<u8>(
            dst,
            at,
            &vals,
            accumulate.then_some(|a, b| a.wrapping_add(b)),
        ),
        DType::I64 => go::<i64>(
            dst,
            at,
            &vals,
            accumulate.then_some(|a, b| a.wrapping_add(b)),
        ),
        DType::Bool => go::<bool>(dst, at, &vals, accumulate.then_some(|a, b| a | b)),
    }
}

/// `set(d[o], v[i])` for the storage offset `o` of each element `i` of `view`,
/// row-major (`v` one element per view element). Err when the view does not fit `d`.
fn put_runs<T: Copy>(d: &mut [T], view: &Tensor, v: &[T], set: impl Fn(&mut T, T)) -> Result<()> {
    let (shape, strides) = (view.shape(), view.strides());
    if !view_fits(shape, strides, view.offset(), d.len()) || v.len() < view.numel() {
        return Err(err(
            ErrorKind::RuntimeError,
            "internal: put view out of bounds",
        ));
    }
    let outer = shape.len().saturating_sub(1);
    let (inner, step) = match (shape.last(), strides.last()) {
        (Some(&n), Some(&s)) => (n, s),
        _ => (1, 1),
    };
    let mut rows = v.chunks_exact(inner.max(1));
    for_each_offset(&shape[..outer], &strides[..outer], view.offset(), |base| {
        let Some(row) = rows.next() else { return };
        if step == 1 {
            for (o, &x) in d[base..base + inner].iter_mut().zip(row) {
                set(o, x);
            }
        } else {
            for (j, &x) in row.iter().enumerate() {
                set(&mut d[base + j * step], x);
            }
        }
    });
    Ok(())
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
        // as PyTorch's gather/scatter_add: negative indices are errors, not wrapped (and
        // its class, RuntimeError)
        if i < 0 || i >= size {
            return Err(err(
                ErrorKind::RuntimeError,
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
