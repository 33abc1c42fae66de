//! Elementwise kernels: map one tensor, zip two (broadcasting), write values into a
//! strided destination. Contiguous inputs take slice fast paths, split across threads
//! above `PAR_THRESHOLD`.

use super::strided::{for_each_offset, for_each_offset2};
use super::PAR_THRESHOLD;
use crate::error::{ErrorKind, Result};
use crate::tensor::dtype::Elem;
use crate::tensor::shape::broadcast_strides;
use crate::tensor::storage::alloc_vec;
use crate::tensor::{err, Tensor};
use rayon::prelude::*;

fn wrong_dtype(t: &Tensor, want: crate::tensor::DType) -> crate::error::Error {
    err(
        ErrorKind::RuntimeError,
        format!(
            "internal: kernel expected {} but got {}",
            want.name(),
            t.dtype().name()
        ),
    )
}

/// `out[i] = f(a[i])`; `a` must have dtype `A`.
pub fn map<A: Elem, O: Elem>(a: &Tensor, f: impl Fn(A) -> O + Sync + Send) -> Result<Tensor> {
    let n = a.numel();
    let mut out = alloc_vec::<O>(n)?;
    {
        let buf = a.storage().borrow();
        let src = A::slice(&buf).ok_or_else(|| wrong_dtype(a, A::DTYPE))?;
        if a.is_contiguous() {
            let s = src.get(a.offset()..a.offset() + n).unwrap_or(&[]);
            if n >= PAR_THRESHOLD {
                out.par_extend(s.par_iter().map(|&x| f(x)));
            } else {
                out.extend(s.iter().map(|&x| f(x)));
            }
        } else {
            for_each_offset(a.shape(), a.strides(), a.offset(), |o| out.push(f(src[o])));
        }
    }
    Ok(Tensor::from_vec(out, a.shape()))
}

/// `out = f(a, b)` broadcast to `shape`; `a`, `b` must have dtypes `A`, `B`.
pub fn zip<A: Elem, B: Elem, O: Elem>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    f: impl Fn(A, B) -> O + Sync + Send,
) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut out = alloc_vec::<O>(n)?;
    {
        let ba = a.storage().borrow();
        let bb = b.storage().borrow();
        let sa = A::slice(&ba).ok_or_else(|| wrong_dtype(a, A::DTYPE))?;
        let sb = B::slice(&bb).ok_or_else(|| wrong_dtype(b, B::DTYPE))?;
        let same = a.shape() == shape && b.shape() == shape;
        if same && a.is_contiguous() && b.is_contiguous() {
            let xa = sa.get(a.offset()..a.offset() + n).unwrap_or(&[]);
            let xb = sb.get(b.offset()..b.offset() + n).unwrap_or(&[]);
            if n >= PAR_THRESHOLD {
                out.par_extend(xa.par_iter().zip(xb.par_iter()).map(|(&x, &y)| f(x, y)));
            } else {
                out.extend(xa.iter().zip(xb.iter()).map(|(&x, &y)| f(x, y)));
            }
        } else if a.shape() == shape && a.is_contiguous() && b.numel() == 1 {
            let y = sb.get(b.offset()).copied().unwrap_or(B::zero());
            let xa = sa.get(a.offset()..a.offset() + n).unwrap_or(&[]);
            out.extend(xa.iter().map(|&x| f(x, y)));
        } else {
            let st_a = broadcast_strides(a.shape(), a.strides(), shape);
            let st_b = broadcast_strides(b.shape(), b.strides(), shape);
            for_each_offset2(shape, &st_a, a.offset(), &st_b, b.offset(), |i, j| {
                out.push(f(sa[i], sb[j]))
            });
        }
    }
    Ok(Tensor::from_vec(out, shape))
}

/// Write `vals` (row-major, `dst.numel()` of them) into `dst`'s elements, in place.
pub fn assign<T: Elem>(dst: &Tensor, vals: &[T]) -> Result<()> {
    let mut buf = dst.storage().borrow_mut();
    let d = T::slice_mut(&mut buf).ok_or_else(|| wrong_dtype(dst, T::DTYPE))?;
    if dst.is_contiguous() {
        let n = dst.numel();
        if let Some(s) = d.get_mut(dst.offset()..dst.offset() + n) {
            s.copy_from_slice(vals.get(..n).unwrap_or(vals));
        }
        return Ok(());
    }
    let mut k = 0;
    for_each_offset(dst.shape(), dst.strides(), dst.offset(), |o| {
        if let Some(&v) = vals.get(k) {
            d[o] = v;
        }
        k += 1;
    });
    Ok(())
}

/// Set every element of `dst` to `v`, in place.
pub fn fill<T: Elem>(dst: &Tensor, v: T) -> Result<()> {
    let mut buf = dst.storage().borrow_mut();
    let d = T::slice_mut(&mut buf).ok_or_else(|| wrong_dtype(dst, T::DTYPE))?;
    for_each_offset(dst.shape(), dst.strides(), dst.offset(), |o| d[o] = v);
    Ok(())
}
