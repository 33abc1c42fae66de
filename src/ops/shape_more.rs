//! Composite shape, indexing and product ops of PyTorch's API over the primitives
//! (views, `index_select`, `gather`, `scatter_add`, `where`, `matmul`): `movedim flip
//! roll unbind repeat_interleave tile tril triu diag diagonal diag_embed trace meshgrid
//! broadcast_tensors take take_along_dim masked_select scatter index_add bmm tensordot
//! kron cross cdist`; `einsum` is einsum.rs.

use super::more::index_const;
use super::{where_, BinaryOp};
use crate::error::{ErrorKind, Result};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::linalg::matmul;
use crate::tensor::shape::{broadcast_shapes, norm_dim};
pub use crate::tensor::views::flip;
use crate::tensor::{err, Tensor};

fn shape_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&d| d as i64).collect()
}

/// Each of `dims` normalized, in the given order (`norm_dims` sorts them).
fn dims_in_order(op: &str, dims: &[i64], ndim: usize) -> Result<Vec<usize>> {
    dims.iter().map(|&d| norm_dim(op, d, ndim)).collect()
}

/// `movedim(x, source, destination)`.
pub fn movedim(x: &Tensor, src: &[i64], dst: &[i64]) -> Result<Tensor> {
    if src.len() != dst.len() {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "movedim: Invalid source or destination dims: source ({src:?} dims) should contain the same number of dims as destination ({dst:?} dims)"
            ),
        ));
    }
    let nd = x.ndim();
    let s = dims_in_order("movedim", src, nd)?;
    let d = dims_in_order("movedim", dst, nd)?;
    let mut perm: Vec<Option<usize>> = vec![None; nd];
    for (&a, &b) in s.iter().zip(&d) {
        if perm[b].is_some() {
            return Err(err(
                ErrorKind::RuntimeError,
                "movedim: repeated dim in `destination`",
            ));
        }
        perm[b] = Some(a);
    }
    let mut rest = (0..nd).filter(|i| !s.contains(i));
    let perm: Vec<i64> = perm
        .into_iter()
        .map(|p| p.or_else(|| rest.next()).unwrap_or(0) as i64)
        .collect();
    x.permute(&perm)
}

/// `roll(x, shifts, dims)`; without dims, the flattened tensor rolls.
pub fn roll(x: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if dims.is_empty() {
        if shifts.len() != 1 {
            return Err(err(
                ErrorKind::RuntimeError,
                "roll: shifts and dims must align (got no dims)",
            ));
        }
        return roll(&x.reshape(&[-1])?, shifts, &[0])?.reshape(&shape_i64(x.shape()));
    }
    if shifts.len() != dims.len() {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "roll: shifts and dimensions must align. shifts: {}, dims: {}",
                shifts.len(),
                dims.len()
            ),
        ));
    }
    let mut out = x.clone();
    for (&sh, &d) in shifts.iter().zip(dims) {
        let d = norm_dim("roll", d, x.ndim())?;
        let n = x.shape()[d] as i64;
        if n == 0 {
            continue;
        }
        let idx: Vec<i64> = (0..n).map(|i| (i - sh).rem_euclid(n)).collect();
        out = out.index_select(d as i64, &index_const(idx, &[n as usize])?)?;
    }
    if out.same(x) {
        return super::clone(x);
    }
    Ok(out)
}

/// `unbind(x, dim)`: the slices along `dim` (views).
pub fn unbind(x: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let d = norm_dim("unbind", dim, x.ndim())?;
    if x.ndim() == 0 {
        return Err(err(
            ErrorKind::IndexError,
            "unbind(): Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let since = crate::autograd::next_node_id();
    (0..x.shape()[d] as i64)
        .map(|i| {
            let piece = x.narrow(d as i64, i, 1)?.squeeze(Some(d as i64))?;
            crate::autograd::names::name_composite(&piece, since, "UnbindBackward0");
            Ok(piece)
        })
        .collect()
}

/// `repeat_interleave(x, repeats, dim)`: `repeats` one count or one per slice.
pub fn repeat_interleave(x: &Tensor, repeats: &[i64], dim: Option<i64>) -> Result<Tensor> {
    let (src, d) = match dim {
        None => (x.reshape(&[-1])?, 0),
        Some(d) => (x.clone(), norm_dim("repeat_interleave", d, x.ndim())?),
    };
    let n = src.shape().get(d).copied().unwrap_or(1);
    let reps: Vec<i64> = match repeats {
        [r] => vec![*r; n],
        r if r.len() == n => r.to_vec(),
        r => {
            return Err(err(
                ErrorKind::RuntimeError,
                format!("repeat_interleave: repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({d}) = {n}", r.len()),
            ))
        }
    };
    if reps.iter().any(|&r| r < 0) {
        return Err(err(
            ErrorKind::RuntimeError,
            "repeat_interleave: repeats can not be negative",
        ));
    }
    // the index is allocated under the tensor caps (MemoryError, not an abort, for
    // `ones(2).repeat_interleave(1 << 40)`)
    let k = reps
        .iter()
        .try_fold(0usize, |acc, &r| acc.checked_add(r as usize))
        .unwrap_or(usize::MAX);
    let idx = crate::tensor::storage::collect_vec::<i64>(
        k,
        reps.iter()
            .enumerate()
            .flat_map(|(i, &r)| std::iter::repeat_n(i as i64, r as usize)),
    )?;
    src.index_select(d as i64, &index_const(idx, &[k])?)
}

/// `tile(x, reps)`: `repeat` with `reps` padded to the tensor's rank.
pub fn tile(x: &Tensor, reps: &[i64]) -> Result<Tensor> {
    let nd = x.ndim().max(reps.len());
    let mut r = vec![1i64; nd - reps.len()];
    r.extend_from_slice(reps);
    let sizes: Vec<usize> = r
        .iter()
        .map(|&v| {
            usize::try_from(v).map_err(|_| {
                err(
                    ErrorKind::RuntimeError,
                    format!("tile: negative repeat {v}"),
                )
            })
        })
        .collect::<Result<_>>()?;
    let mut shape = vec![1i64; nd - x.ndim()];
    shape.extend(shape_i64(x.shape()));
    x.reshape(&shape)?.repeat(&sizes)
}

/// `tril`/`triu(x, diagonal)` of the last two dims.
pub fn triangle(x: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    let since = crate::autograd::next_node_id();
    let out = triangle_where(x, diagonal, upper)?;
    let node = if upper {
        "TriuBackward0"
    } else {
        "TrilBackward0"
    };
    crate::autograd::names::name_composite(&out, since, node);
    Ok(out)
}

/// `triangle`'s values: `x` where the mask keeps it, else 0.
fn triangle_where(x: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    let name = if upper { "triu" } else { "tril" };
    if x.ndim() < 2 {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("{name}: input tensor must have at least 2 dimensions"),
        ));
    }
    if let Some(mask) = symbolic_triangle(x, diagonal, upper)? {
        return where_(&mask, x, &Tensor::scalar(Scalar::Int(0)).cast(x.dtype())?);
    }
    let (r, c) = (x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]);
    let keep: Vec<bool> = (0..r as i64)
        .flat_map(|i| {
            (0..c as i64).map(move |j| {
                if upper {
                    j - i >= diagonal
                } else {
                    j - i <= diagonal
                }
            })
        })
        .collect();
    let mask =
        crate::ir::record_op::record_const(|| crate::tensor::creation::from_bool(keep, &[r, c]))?;
    where_(&mask, x, &Tensor::scalar(Scalar::Int(0)).cast(x.dtype())?)
}

/// In a capture with symbolic sizes, tril/triu's mask computed from `x`'s own sizes:
/// ones expanded to `x`'s shape (taking its symbolic sizes), their cumulative sums along
/// the two last dims as row and column numbers, compared. The graph re-sizes it per
/// call, where a constant mask would fix the sizes. None outside such a capture.
fn symbolic_triangle(x: &Tensor, diagonal: i64, upper: bool) -> Result<Option<Tensor>> {
    let Some(off) = crate::tensor::creation::symbolic_diagonal_offsets(x)? else {
        return Ok(None);
    };
    let op = if upper { BinaryOp::Ge } else { BinaryOp::Le };
    Ok(Some(off.cmp_s(op, diagonal as f64)?))
}

/// Flat positions of the `offset` diagonal of an `r x c` matrix.
fn diag_positions(r: usize, c: usize, offset: i64) -> Vec<i64> {
    let (i0, j0) = if offset >= 0 {
        (0, offset)
    } else {
        (-offset, 0)
    };
    (0..)
        .map(|k| (i0 + k, j0 + k))
        .take_while(|&(i, j)| i < r as i64 && j < c as i64)
        .map(|(i, j)| i * c as i64 + j)
        .collect()
}

/// `diagonal(x, offset, dim1, dim2)`: the diagonal as the last dim (a copy).
pub fn diagonal(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    if x.ndim() < 2 {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "diagonal: expected a tensor of at least 2 dims, got {}",
                x.ndim()
            ),
        ));
    }
    let moved = movedim(x, &[dim1, dim2], &[-2, -1])?;
    let nd = moved.ndim();
    let (r, c) = (moved.shape()[nd - 2], moved.shape()[nd - 1]);
    let mut flat = shape_i64(&moved.shape()[..nd - 2]);
    flat.push((r * c) as i64);
    let pos = diag_positions(r, c, offset);
    let k = pos.len();
    moved
        .reshape(&flat)?
        .index_select(-1, &index_const(pos, &[k])?)
}

/// `diag_embed(x, offset)`: the last dim becomes the `offset` diagonal of new last two
/// dims.
pub fn diag_embed(x: &Tensor, offset: i64) -> Result<Tensor> {
    let v = if x.ndim() == 0 {
        x.reshape(&[1])?
    } else {
        x.clone()
    };
    let nd = v.ndim();
    let n = v.shape()[nd - 1];
    let m = n + offset.unsigned_abs() as usize;
    let pos = diag_positions(m, m, offset);
    let mut lead: Vec<usize> = v.shape()[..nd - 1].to_vec();
    let mut idx_shape = vec![1usize; nd - 1];
    idx_shape.push(n);
    let idx = index_const(pos, &idx_shape)?
        .expand(&shape_i64(v.shape()))?
        .contiguous()?;
    lead.push(m * m);
    let zeros = crate::tensor::creation::zeros(&lead, v.dtype())?;
    let mut out_shape = shape_i64(&v.shape()[..nd - 1]);
    out_shape.extend([m as i64, m as i64]);
    zeros.scatter_add(-1, &idx, &v)?.reshape(&out_shape)
}

/// `diag(x, diagonal)`: a 1-D vector's diagonal matrix, or a matrix's diagonal.
pub fn diag(x: &Tensor, offset: i64) -> Result<Tensor> {
    match x.ndim() {
        1 => diag_embed(x, offset),
        2 => diagonal(x, offset, 0, 1),
        n => Err(err(
            ErrorKind::RuntimeError,
            format!("diag(): Supports 1D or 2D tensors. Got {n}D"),
        )),
    }
}

/// `trace(x)` of a matrix.
pub fn trace(x: &Tensor) -> Result<Tensor> {
    if x.ndim() != 2 {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "trace: expected a matrix, but got tensor with dim {}",
                x.ndim()
            ),
        ));
    }
    let since = crate::autograd::next_node_id();
    let out = diagonal(x, 0, 0, 1)?.sum(&[], false)?;
    crate::autograd::names::name_composite(&out, since, "TraceBackward0");
    Ok(out)
}

/// `broadcast_tensors(*ts)`.
pub fn broadcast_tensors(ts: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut shape: Vec<usize> = vec![];
    for t in ts {
        shape = broadcast_shapes("broadcast_tensors", &shape, t.shape())?.to_vec();
    }
    ts.iter().map(|t| t.expand(&shape_i64(&shape))).collect()
}

/// `meshgrid(*ts, indexing)`: 1-D tensors expanded to the grid ("ij" or "xy").
pub fn meshgrid(ts: &[Tensor], xy: bool) -> Result<Vec<Tensor>> {
    let mut sizes: Vec<usize> = ts.iter().map(|t| t.numel()).collect();
    if ts.iter().any(|t| t.ndim() > 1) {
        return Err(err(
            ErrorKind::RuntimeError,
            "meshgrid: Expected 0D or 1D tensor in the tensor list",
        ));
    }
    let swap = xy && ts.len() >= 2;
    if swap {
        sizes.swap(0, 1);
    }
    let full = shape_i64(&sizes);
    ts.iter()
        .enumerate()
        .map(|(i, t)| {
            let axis = if swap && i < 2 { 1 - i } else { i };
            let mut s = vec![1i64; ts.len()];
            s[axis] = t.numel() as i64;
            t.reshape(&s)?.expand(&full)
        })
        .collect()
}

/// `take(x, index)`: elements of the flattened tensor, in the shape of `index`.
pub fn take(x: &Tensor, index: &Tensor) -> Result<Tensor> {
    if index.dtype() != DType::I64 {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "take(): Expected a long tensor for index, but got {}",
                index.dtype().name()
            ),
        ));
    }
    let flat = x.reshape(&[-1])?.index_select(0, &index.reshape(&[-1])?)?;
    flat.reshape(&shape_i64(index.shape()))
}

/// `take_along_dim(x, indices, dim)`: `gather` with broadcasting (flattened without dim).
pub fn take_along_dim(x: &Tensor, idx: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let Some(d) = dim else {
        return x.reshape(&[-1])?.gather(0, &idx.reshape(&[-1])?);
    };
    let d = norm_dim("take_along_dim", d, x.ndim())?;
    let (mut xs, mut is) = (x.shape().to_vec(), idx.shape().to_vec());
    (xs[d], is[d]) = (1, 1);
    let b = broadcast_shapes("take_along_dim", &xs, &is)?.to_vec();
    let (mut xb, mut ib) = (b.clone(), b);
    xb[d] = x.shape()[d];
    ib[d] = idx.shape()[d];
    x.expand(&shape_i64(&xb))?
        .gather(d as i64, &idx.expand(&shape_i64(&ib))?.contiguous()?)
}

/// `masked_select(x, mask)`: the elements where the (broadcast) mask is True, 1-D.
pub fn masked_select(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "masked_select: expected BoolTensor for mask, got {}",
                mask.dtype().name()
            ),
        ));
    }
    let shape = broadcast_shapes("masked_select", x.shape(), mask.shape())?;
    let m = mask.expand(&shape_i64(&shape))?;
    let pos = crate::tensor::sorting::nonzero(&m.reshape(&[-1])?)?.reshape(&[-1])?;
    x.expand(&shape_i64(&shape))?
        .reshape(&[-1])?
        .index_select(0, &pos)
}

/// `scatter(x, dim, index, src)`: `x` with `src` written at `index` along `dim`; the last
/// of repeated writes stands, as torch's CPU kernel (the others get no gradient).
pub fn scatter(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let since = crate::autograd::next_node_id();
    let out = scatter_parts(x, dim, index, src)?;
    let node = ["ScatterBackward0", "ScatterBackward1"][usize::from(src.ndim() == 0)];
    crate::autograd::names::name_composite(&out, since, node);
    Ok(out)
}

fn scatter_parts(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let zeros = crate::tensor::creation::zeros(x.shape(), x.dtype())?;
    let ones = crate::tensor::creation::ones(index.shape(), DType::I64)?;
    let hit = zeros
        .cast(DType::I64)?
        .scatter_add(dim, index, &ones)?
        .cmp_s(BinaryOp::Gt, 0.0)?;
    if src.ndim() == 0 {
        return where_(&hit, &src.cast(x.dtype())?, x);
    }
    let src = {
        let part: Vec<i64> = shape_i64(index.shape());
        let mut s = src.cast(x.dtype())?;
        for (d, &n) in part.iter().enumerate() {
            if s.shape()[d] as i64 != n {
                s = s.narrow(d as i64, 0, n)?;
            }
        }
        s
    };
    let placed = zeros.scatter_overwrite(dim, index, &src)?;
    where_(&hit, &placed, x)
}

/// `index_add(x, dim, index, source, alpha)`.
pub fn index_add(
    x: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    alpha: f64,
) -> Result<Tensor> {
    let d = norm_dim("index_add", dim, x.ndim())?;
    if index.ndim() > 1
        || source.ndim() != x.ndim()
        || source.shape().get(d) != Some(&index.numel())
    {
        return Err(err(
            ErrorKind::IndexError,
            format!(
                "index_add(): source {:?} and index {:?} do not match self {:?} along dim {dim}",
                source.shape(),
                index.shape(),
                x.shape()
            ),
        ));
    }
    let mut s = vec![1i64; x.ndim()];
    s[d] = index.numel() as i64;
    let idx = index
        .reshape(&s)?
        .expand(&shape_i64(source.shape()))?
        .contiguous()?;
    let src = if alpha == 1.0 {
        source.clone()
    } else {
        source.mul_s(alpha)?
    };
    x.scatter_add(d as i64, &idx, &src.cast(x.dtype())?)
}

/// `bmm(a, b)`: batched matrix product of two 3-D tensors.
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 3
        || b.ndim() != 3
        || a.shape()[0] != b.shape()[0]
        || a.shape()[2] != b.shape()[1]
    {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "bmm: expected batches of matrices of matching sizes, got {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    matmul(a, b)
}

/// `tensordot(a, b, dims)`: contracts `da` of `a` with `db` of `b`.
pub fn tensordot(a: &Tensor, b: &Tensor, da: &[i64], db: &[i64]) -> Result<Tensor> {
    let da = dims_in_order("tensordot", da, a.ndim())?;
    let db = dims_in_order("tensordot", db, b.ndim())?;
    if da.len() != db.len()
        || da
            .iter()
            .zip(&db)
            .any(|(&i, &j)| a.shape()[i] != b.shape()[j])
    {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "tensordot: contracted dims of {:?} and {:?} do not match",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let fa: Vec<usize> = (0..a.ndim()).filter(|i| !da.contains(i)).collect();
    let fb: Vec<usize> = (0..b.ndim()).filter(|i| !db.contains(i)).collect();
    let k: usize = da.iter().map(|&i| a.shape()[i]).product();
    let pa: Vec<i64> = fa.iter().chain(&da).map(|&i| i as i64).collect();
    let pb: Vec<i64> = db.iter().chain(&fb).map(|&i| i as i64).collect();
    let ma: usize = fa.iter().map(|&i| a.shape()[i]).product();
    let nb: usize = fb.iter().map(|&i| b.shape()[i]).product();
    let am = a.permute(&pa)?.reshape(&[ma as i64, k as i64])?;
    let bm = b.permute(&pb)?.reshape(&[k as i64, nb as i64])?;
    let mut out: Vec<i64> = fa.iter().map(|&i| a.shape()[i] as i64).collect();
    out.extend(fb.iter().map(|&i| b.shape()[i] as i64));
    matmul(&am, &bm)?.reshape(&out)
}

/// `kron(a, b)`: the Kronecker product.
pub fn kron(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let nd = a.ndim().max(b.ndim());
    let pad = |t: &Tensor| {
        let mut s = vec![1i64; nd - t.ndim()];
        s.extend(shape_i64(t.shape()));
        t.reshape(&s)
    };
    let (a, b) = (pad(a)?, pad(b)?);
    let (mut sa, mut sb) = (vec![], vec![]);
    for d in 0..nd {
        sa.extend([a.shape()[d] as i64, 1]);
        sb.extend([1, b.shape()[d] as i64]);
    }
    let out: Vec<i64> = (0..nd)
        .map(|d| (a.shape()[d] * b.shape()[d]) as i64)
        .collect();
    a.reshape(&sa)?.mul(&b.reshape(&sb)?)?.reshape(&out)
}

/// `cross(a, b, dim)`: the cross product of 3-vectors along `dim` (default: the first
/// dim of size 3, as `torch.cross` without dim).
pub fn cross(a: &Tensor, b: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let shape = broadcast_shapes("cross", a.shape(), b.shape())?.to_vec();
    let d = match dim {
        Some(d) => norm_dim("cross", d, shape.len())?,
        None => shape.iter().position(|&s| s == 3).unwrap_or(usize::MAX),
    };
    if shape.get(d) != Some(&3) {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "linalg.cross: inputs dimension {} must have length 3. Got {:?} and {:?}",
                dim.map_or("(none of size 3)".to_string(), |d| d.to_string()),
                a.shape(),
                b.shape()
            ),
        ));
    }
    let (a, b) = (a.expand(&shape_i64(&shape))?, b.expand(&shape_i64(&shape))?);
    let i1 = index_const(vec![1, 2, 0], &[3])?;
    let i2 = index_const(vec![2, 0, 1], &[3])?;
    let d = d as i64;
    let l = a.index_select(d, &i1)?.mul(&b.index_select(d, &i2)?)?;
    l.sub(&a.index_select(d, &i2)?.mul(&b.index_select(d, &i1)?)?)
}

/// `cdist(x1, x2, p)`: p-norm distances between the rows of `x1` and `x2`.
pub fn cdist(x1: &Tensor, x2: &Tensor, p: f64) -> Result<Tensor> {
    if x1.ndim() < 2 || x2.ndim() < 2 || x1.shape().last() != x2.shape().last() {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "cdist: X1 {:?} and X2 {:?} must be at least 2-D with the same last dim",
                x1.shape(),
                x2.shape()
            ),
        ));
    }
    let since = crate::autograd::next_node_id();
    let out = x1
        .unsqueeze(-2)?
        .sub(&x2.unsqueeze(-3)?)?
        .norm(p, &[-1], false)?;
    crate::autograd::names::name_composite(&out, since, "CdistBackward0");
    Ok(out)
}
