//! Shape rules: element counts, strides, broadcasting, dim normalisation, and the
//! `(2, 3)` spelling of shapes used in error messages.

use super::err;
use crate::error::{ErrorKind, Result};
use smallvec::SmallVec;

/// Sizes or strides of a tensor (inline up to 6 dims: no allocation for small ranks).
pub type Dims = SmallVec<[usize; 6]>;

/// The number of elements, or `MemoryError` when the product overflows.
pub fn numel(shape: &[usize]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        acc.checked_mul(d).ok_or_else(|| {
            err(
                ErrorKind::MemoryError,
                format!("shape {} has too many elements", fmt_shape(shape)),
            )
        })
    })
}

/// Row-major strides of a contiguous tensor of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut st: Dims = SmallVec::from_elem(0, shape.len());
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        st[i] = acc;
        acc = acc.saturating_mul(shape[i].max(1));
    }
    st
}

/// True when (shape, strides) is the row-major layout (size-1 dims may have any stride).
pub fn is_contiguous(shape: &[usize], strides: &[usize]) -> bool {
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        if shape[i] != 1 && strides[i] != acc {
            return false;
        }
        acc = acc.saturating_mul(shape[i]);
    }
    true
}

/// `(2, 3)`, `(4,)`, `()` as Python prints a shape tuple.
pub fn fmt_shape(shape: &[usize]) -> String {
    match shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", shape[0]),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = SmallVec::from_elem(1, n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(err(
                ErrorKind::ShapeError,
                format!(
                    "{op}: shapes {} and {} cannot be broadcast",
                    fmt_shape(a),
                    fmt_shape(b)
                ),
            ));
        };
    }
    Ok(out)
}

/// Strides that read a tensor of (shape, strides) as if it had `out` shape
/// (broadcast dims get stride 0). The caller has checked compatibility.
pub fn broadcast_strides(shape: &[usize], strides: &[usize], out: &[usize]) -> Dims {
    let n = out.len();
    let mut st: Dims = SmallVec::from_elem(0, n);
    for i in 0..shape.len() {
        let j = i + n - shape.len();
        st[j] = if shape[i] == 1 && out[j] != 1 {
            0
        } else {
            strides[i]
        };
    }
    st
}

/// A possibly negative dim index normalised into `0..ndim`.
pub fn norm_dim(op: &str, dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n {
        return Err(err(
            ErrorKind::IndexError,
            format!(
                "{op}: dimension out of range (expected to be in range of [{}, {}], but got {dim})",
                -n,
                n - 1
            ),
        ));
    }
    Ok(d as usize)
}

/// Like `norm_dim`, for an insertion point (`unsqueeze`): range `0..=ndim`.
pub fn norm_insert_dim(op: &str, dim: i64, ndim: usize) -> Result<usize> {
    norm_dim(op, dim, ndim + 1)
}

/// A list of dims normalised, sorted, checked for repeats. Empty `dims` = all dims.
pub fn norm_dims(op: &str, dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    if dims.is_empty() {
        return Ok((0..ndim).collect());
    }
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let d = norm_dim(op, d, ndim)?;
        if out.contains(&d) {
            return Err(err(
                ErrorKind::ValueError,
                format!("{op}: dim {d} appears multiple times in the list of dims"),
            ));
        }
        out.push(d);
    }
    out.sort_unstable();
    if ndim == 0 {
        out.clear();
    }
    Ok(out)
}

/// Strides that read a tensor of (`shape`, `strides`) as `new` shape without copying,
/// or None when some new dim would span two non-contiguous chunks of the old layout
/// (PyTorch's `computeStride`: old dims are merged chunk by chunk, where a chunk is a
/// run of dims each contiguous within the next, and the new dims must split each chunk
/// exactly). Both shapes hold the same number of elements.
pub fn view_strides(shape: &[usize], strides: &[usize], new: &[usize]) -> Option<Dims> {
    if shape.is_empty() {
        return Some(SmallVec::from_elem(1, new.len()));
    }
    let n: usize = shape.iter().product();
    if n == 0 {
        return Some(if shape == new {
            strides.into()
        } else {
            contiguous_strides(new)
        });
    }
    let mut out: Dims = SmallVec::from_elem(0, new.len());
    let mut view_d = new.len();
    let mut chunk_stride = strides[shape.len() - 1];
    let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
    for d in (0..shape.len()).rev() {
        tensor_numel *= shape[d];
        let chunk_ends =
            d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_stride);
        if !chunk_ends {
            continue;
        }
        while view_d > 0 && (view_numel < tensor_numel || new[view_d - 1] == 1) {
            view_d -= 1;
            out[view_d] = view_numel * chunk_stride;
            view_numel *= new[view_d];
        }
        if view_numel != tensor_numel {
            return None;
        }
        if d > 0 {
            chunk_stride = strides[d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    (view_d == 0).then_some(out)
}
