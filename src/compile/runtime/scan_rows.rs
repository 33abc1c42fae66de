//! A loop's scan output built while the loop runs: when the trip count is known and the
//! first iteration's value is a contiguous f32 tensor, the `[n, ...]` result is
//! allocated once and each iteration's value is copied into its row, so the body's
//! output buffer is free for reuse at the next iteration (no tensor kept per
//! iteration, no stacking copy at the end). Otherwise the values are kept and stacked
//! at the end. Row `pos` holds the iteration whose index is `start + pos * step` (for a
//! reverse loop, the iterations run from the last row up).

use crate::compile::internal;
use crate::error::Result;
use crate::tensor::storage::alloc_filled;
use crate::tensor::{views, Buffer, DType, Tensor};

/// One scan output under construction.
pub enum ScanRows {
    /// The values kept (unknown trip count, or not contiguous f32), by row.
    Kept(Vec<(usize, Tensor)>),
    /// The result allocated up front; `row` elements per iteration.
    Filled { out: Tensor, row: usize },
}

/// Whether `t` can be copied as a plain f32 slice.
fn plain_f32(t: &Tensor) -> bool {
    t.dtype() == DType::F32 && t.is_contiguous()
}

impl ScanRows {
    /// Stores iteration value `t` as row `pos` of `n` rows (`None`: unknown count).
    pub fn push(&mut self, n: Option<usize>, pos: usize, t: Tensor) -> Result<()> {
        match self {
            ScanRows::Filled { out, row } => copy_row(out, *row, pos, &t),
            ScanRows::Kept(v) => match n {
                Some(n) if v.is_empty() && plain_f32(&t) => {
                    let row = t.numel();
                    let mut shape = vec![n];
                    shape.extend_from_slice(t.shape());
                    let len = n
                        .checked_mul(row)
                        .ok_or_else(|| internal("a scan output is too large"))?;
                    let out = Tensor::from_buffer(Buffer::F32(alloc_filled(len, 0.0f32)?), &shape)?;
                    copy_row(&out, row, pos, &t)?;
                    *self = ScanRows::Filled { out, row };
                    Ok(())
                }
                _ => {
                    v.try_reserve(1)
                        .map_err(|_| internal("out of memory for a scan output"))?;
                    v.push((pos, t));
                    Ok(())
                }
            },
        }
    }

    /// The stacked result (`None` when no iteration ran: nothing to stack).
    pub fn finish(self) -> Result<Tensor> {
        match self {
            ScanRows::Filled { out, .. } => Ok(out),
            ScanRows::Kept(mut v) => {
                v.sort_by_key(|(pos, _)| *pos);
                let rows: Vec<Tensor> = v.into_iter().map(|(_, t)| t).collect();
                views::stack(&rows, 0)
            }
        }
    }
}

/// Copies the contiguous f32 `t` (`row` elements) into row `pos` of `out`.
fn copy_row(out: &Tensor, row: usize, pos: usize, t: &Tensor) -> Result<()> {
    if out.shape().get(1..) != Some(t.shape()) {
        return Err(internal(
            "a scan output changed its shape between iterations",
        ));
    }
    // `out` is contiguous f32 (made so); `t` has its row's shape. Both borrows succeed
    // only for a contiguous f32 `t` in another storage (a view of `out` itself is
    // borrowed already when `out` is borrowed for writing).
    let (Some(from), Some(mut d)) = (t.f32_elems(), out.f32_elems_mut()) else {
        return Err(internal(
            "a scan row is not a contiguous float32 tensor apart from its stack",
        ));
    };
    match pos.checked_mul(row).and_then(|a| d.get_mut(a..a + row)) {
        Some(at) if at.len() == from.len() => {
            at.copy_from_slice(&from);
            Ok(())
        }
        _ => Err(internal("a scan row is out of range")),
    }
}
