//! Executor fast paths for nodes eager evaluates through its general strided kernels:
//! `where(mask, x, y)` with a contiguous mask and operands that are contiguous of the
//! mask's shape or single elements (ReLU's backward `where(x > 0, g, 0)`), one pass
//! over the mask with no gathered copies. Any other layout returns `None` and the
//! executor calls the eager op (same values either way: a select copies elements).
//!
//! `sum(x, dims=[0])` of a contiguous 2-D f32 (every `Linear` bias's gradient) as a
//! column reduction: rows are added in order into f64 accumulators, the very sums
//! eager computes per column after gathering the columns into contiguous rows.

use crate::error::Result;
use crate::tensor::storage::alloc_vec;
use crate::tensor::{Buffer, Tensor};

/// An operand of the select: a contiguous run of the mask's length, or one element.
enum Operand<'a> {
    Full(&'a [f32]),
    One(f32),
}

impl Operand<'_> {
    fn at(&self, i: usize) -> f32 {
        match self {
            Operand::Full(v) => v.get(i).copied().unwrap_or(0.0),
            Operand::One(x) => *x,
        }
    }
}

/// The contiguous elements `t` covers, when it is laid out without gaps.
fn run_of<'a, T>(t: &Tensor, data: &'a [T]) -> Option<&'a [T]> {
    if !t.is_contiguous() {
        return None;
    }
    data.get(t.offset()..t.offset().checked_add(t.numel())?)
}

fn operand<'a>(t: &Tensor, buf: &'a Buffer, mask: &Tensor) -> Option<Operand<'a>> {
    let Buffer::F32(data) = buf else {
        return None;
    };
    if t.numel() == 1 && t.ndim() <= mask.ndim() {
        return data.get(t.offset()).map(|&x| Operand::One(x));
    }
    (t.shape() == mask.shape())
        .then(|| run_of(t, data))
        .flatten()
        .map(Operand::Full)
}

/// `where(mask, x, y)` in one pass, or `None` when a layout or dtype needs eager's op.
pub fn select(mask: &Tensor, x: &Tensor, y: &Tensor) -> Option<Result<Tensor>> {
    let (bm, bx, by) = (
        mask.storage().borrow(),
        x.storage().borrow(),
        y.storage().borrow(),
    );
    let Buffer::Bool(md) = &*bm else {
        return None;
    };
    let m = run_of(mask, md)?;
    let (ox, oy) = (operand(x, &bx, mask)?, operand(y, &by, mask)?);
    let mut out = match alloc_vec::<f32>(m.len()) {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    out.extend(
        m.iter()
            .enumerate()
            .map(|(i, &c)| if c { ox.at(i) } else { oy.at(i) }),
    );
    Some(Ok(Tensor::from_vec(out, mask.shape())))
}

/// `x.sum(dims=[0], keepdim)` of a contiguous 2-D f32 `x` without eager's transposed
/// gather, or `None` for any other reduction or layout. Bit-identical to eager: each
/// column is summed in f64 in row order from `Sum`'s own neutral element (columns
/// long enough for eager to sum in parallel chunks are left to eager).
pub fn column_sum(x: &Tensor, dims: &[usize], keepdim: bool) -> Option<Result<Tensor>> {
    let (&[rows, cols], [0]) = (x.shape(), dims) else {
        return None;
    };
    if rows == 0 || rows >= crate::tensor::kernels::PAR_THRESHOLD {
        return None;
    }
    let b = x.storage().borrow();
    let Buffer::F32(data) = &*b else {
        return None;
    };
    let m = run_of(x, data)?;
    let zero: f64 = std::iter::empty::<f64>().sum();
    // Eager takes any case this cannot allocate for (and reports it).
    let mut acc: Vec<f64> = Vec::new();
    acc.try_reserve_exact(cols).ok()?;
    acc.resize(cols, zero);
    for row in m.chunks_exact(cols.max(1)).take(rows) {
        acc.iter_mut()
            .zip(row)
            .for_each(|(a, &v)| *a += f64::from(v));
    }
    let mut out = match alloc_vec::<f32>(cols) {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    out.extend(acc.iter().map(|&a| a as f32));
    let shape: &[usize] = if keepdim { &[1, cols] } else { &[cols] };
    Some(Ok(Tensor::from_vec(out, shape)))
}
