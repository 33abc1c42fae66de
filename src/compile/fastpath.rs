//! Executor fast paths for nodes eager evaluates through its general strided kernels:
//! `where(mask, x, y)` with a contiguous mask and operands that are contiguous of the
//! mask's shape or single elements (ReLU's backward `where(x > 0, g, 0)`), one pass
//! over the mask with no gathered copies. Any other layout returns `None` and the
//! executor calls the eager op (same values either way: a select copies elements).

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
