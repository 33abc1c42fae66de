//! Gradients of the matrix functions of tensor/linalg_decomp.rs, as tensor ops over
//! their saved factors. A function with several outputs (`svd`, `eigh`, `qr`) records
//! one node per output: the gradient is linear in the output gradients, so the sum of
//! the nodes' contributions is the whole gradient. The rules call the captured entry
//! points (tensor/linalg_ops.rs) and record their constants, so a compiled backward
//! records them as graph ops.

use super::creation::from_f32;
use super::linalg::matmul;
use super::linalg_ops::{cofactor, inv, solve, LinalgOp};
use super::{err, DType, Tensor};
use crate::autograd::Saved;
use crate::error::{ErrorKind, Result};
use crate::ir::record_op::{record_const, record_op};
use crate::ir::IrOp;

/// Which output of `svd` a node belongs to.
#[derive(Clone, Copy, Debug)]
pub enum SvdPart {
    U,
    S,
    Vh,
}

/// Which output of `qr` a node belongs to.
#[derive(Clone, Copy, Debug)]
pub enum QrPart {
    Q,
    R,
}

/// The factors an `svd` node keeps.
#[derive(Clone)]
pub struct SvdSaved {
    pub u: Saved,
    pub s: Saved,
    pub vh: Saved,
}

/// The backward of one output of a matrix function, with what its rule reads.
pub enum LinalgGrad {
    /// `inv(A)`: its output.
    Inv(Saved),
    /// `det(A)`: A.
    Det(Saved),
    /// The `logabsdet` of `slogdet(A)`: A.
    LogAbsDet(Saved),
    /// The `sign` of `slogdet(A)`: piecewise constant, so no gradient reaches A (as
    /// PyTorch's, whose sign shares the node and needs grad, but sends A nothing).
    SlogdetSign,
    /// `solve(A, B)` (same batch shape, B a matrix): A and the solution X.
    Solve {
        a: Saved,
        out: Saved,
    },
    /// `cholesky(A)`: the factor as returned (upper: L^T).
    Cholesky {
        l: Saved,
        upper: bool,
    },
    Qr(QrPart, Saved, Saved),
    Svd(SvdPart, SvdSaved),
    /// The eigenvalues of `eigh(A)`: the eigenvectors.
    EighValues(Saved),
    EighVectors {
        l: Saved,
        v: Saved,
    },
    Pinv {
        a: Saved,
        out: Saved,
    },
}

fn t(x: &Tensor) -> Result<Tensor> {
    x.transpose(-1, -2)
}

/// 1 below the diagonal of `l`'s matrices (n x n), 0.5 on it, 0 above: a constant, or
/// in a capture with symbolic sizes a mask that follows them.
fn half_lower(l: &Tensor, n: usize) -> Result<Tensor> {
    use crate::optable::BinaryOp;
    if let Some(off) = super::creation::symbolic_diagonal_offsets(l)? {
        let below = off.cmp_s(BinaryOp::Lt, 0.0)?.cast(DType::F32)?;
        let diag = off.cmp_s(BinaryOp::Eq, 0.0)?.cast(DType::F32)?;
        return below.add(&diag.mul_s(0.5)?);
    }
    table(n, n, |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Greater => 1.0,
        std::cmp::Ordering::Equal => 0.5,
        std::cmp::Ordering::Less => 0.0,
    })
}

/// An r x c float32 constant with `f(i, j)` at (i, j) (a graph constant in a capture).
fn table(r: usize, c: usize, f: impl Fn(usize, usize) -> f32) -> Result<Tensor> {
    let mut v = Vec::with_capacity(r * c);
    for i in 0..r {
        for j in 0..c {
            v.push(f(i, j));
        }
    }
    record_const(|| from_f32(v, &[r, c]))
}

/// `x[..., None, None]`: a batch of scalars against a batch of matrices.
fn lift2(x: &Tensor) -> Result<Tensor> {
    x.unsqueeze(-1)?.unsqueeze(-1)
}

/// `1 / (v[..., j] - v[..., i])` off the diagonal, 0 on it (for eigenvalues `v`),
/// or with `squares`, of the squared values (the SVD's); an `IrOp::Linalg` node in a
/// capture.
fn gap(v: &Tensor, squares: bool) -> Result<Tensor> {
    record_op(
        &[v],
        |_| IrOp::Linalg(LinalgOp::GapInverse { squares }),
        || gap_inverse(v, squares),
    )
}

/// `gap`'s kernel (the executor of its node).
pub(crate) fn gap_inverse(v: &Tensor, squares: bool) -> Result<Tensor> {
    let n = v.shape()[v.ndim() - 1];
    let vals = super::linalg_stack::f64_values(v)?;
    let mut out = Vec::with_capacity(vals.len() * n);
    for row in vals.chunks(n.max(1)) {
        for i in 0..n {
            for j in 0..n {
                let (a, b) = if squares {
                    (row[i] * row[i], row[j] * row[j])
                } else {
                    (row[i], row[j])
                };
                out.push(if i == j { 0.0 } else { 1.0 / (b - a) });
            }
        }
    }
    let shape: Vec<usize> = v.shape().iter().copied().chain([n]).collect();
    super::linalg_stack::from_f64_as(out, &shape, v.dtype())
}

fn unsupported(what: &str) -> crate::error::Error {
    err(
        ErrorKind::NotImplementedError,
        format!("the gradient of {what} is not supported yet"),
    )
}

impl LinalgGrad {
    /// The gradients of the node's inputs (A, and B for `solve`) given `g`.
    pub fn grads(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(match self {
            LinalgGrad::Inv(out) => {
                let yt = t(&out.get()?)?;
                vec![Some(matmul(&matmul(&yt, g)?, &yt)?.neg()?)]
            }
            // g * det(A) * A^-T, through the cofactor matrix (also at a singular A).
            LinalgGrad::Det(a) => vec![Some(lift2(g)?.mul(&cofactor(&a.get()?)?)?)],
            LinalgGrad::LogAbsDet(a) => vec![Some(lift2(g)?.mul(&t(&inv(&a.get()?)?)?)?)],
            LinalgGrad::SlogdetSign => vec![None],
            LinalgGrad::Solve { a, out } => {
                let gb = solve(&t(&a.get()?)?.contiguous()?, g)?;
                let ga = matmul(&gb, &t(&out.get()?)?)?.neg()?;
                vec![Some(ga), Some(gb)]
            }
            LinalgGrad::Cholesky { l, upper } => {
                let (l, gl) = if *upper {
                    (t(&l.get()?)?, t(g)?)
                } else {
                    (l.get()?, g.clone())
                };
                let n = l.shape()[l.ndim() - 1];
                let linv = inv(&l)?;
                let half_lower = half_lower(&l, n)?;
                let phi = matmul(&t(&l)?, &gl)?.mul(&half_lower)?;
                let ga = matmul(&matmul(&t(&linv)?, &phi)?, &linv)?;
                vec![Some(ga.add(&t(&ga)?)?.mul_s(0.5)?)]
            }
            LinalgGrad::Qr(part, q, r) => vec![Some(qr_grad(*part, &q.get()?, &r.get()?, g)?)],
            LinalgGrad::Svd(part, s) => vec![Some(svd_grad(*part, s, g)?)],
            LinalgGrad::EighValues(v) => {
                let v = v.get()?;
                vec![Some(matmul(&v.mul(&g.unsqueeze(-2)?)?, &t(&v)?)?)]
            }
            LinalgGrad::EighVectors { l, v } => {
                let v = v.get()?;
                // Symmetrized, as PyTorch's (the input is taken as symmetric).
                let inner = matmul(&t(&v)?, g)?.mul(&gap(&l.get()?, false)?)?;
                let ga = matmul(&matmul(&v, &inner)?, &t(&v)?)?;
                vec![Some(ga.add(&t(&ga)?)?.mul_s(0.5)?)]
            }
            LinalgGrad::Pinv { a, out } => vec![Some(pinv_grad(&a.get()?, &out.get()?, g)?)],
        })
    }
}

/// The backward of `qr` for `A = QR` with R square (m >= n, reduced, or square A):
/// `gA = (gQ + Q copyltu(M)) R^-T`, `M = R gR^T - gQ^T Q`.
fn qr_grad(part: QrPart, q: &Tensor, r: &Tensor, g: &Tensor) -> Result<Tensor> {
    let (p, n) = (r.shape()[r.ndim() - 2], r.shape()[r.ndim() - 1]);
    if p != n {
        return Err(unsupported(if p < n {
            "linalg.qr of a wide matrix (more columns than rows)"
        } else {
            "linalg.qr with mode='complete' of a tall matrix"
        }));
    }
    let (gq, m) = match part {
        QrPart::Q => (Some(g), matmul(&t(g)?, q)?.neg()?),
        QrPart::R => (None, matmul(r, &t(g)?)?),
    };
    let strict = table(n, n, |i, j| f32::from(u8::from(i > j)))?;
    let diag = table(n, n, |i, j| f32::from(u8::from(i == j)))?;
    let low = m.mul(&strict)?;
    let copyltu = low.add(&t(&low)?)?.add(&m.mul(&diag)?)?;
    let mut x = matmul(q, &copyltu)?;
    if let Some(gq) = gq {
        x = x.add(gq)?;
    }
    matmul(&x, &t(&inv(r)?)?)
}

/// The backward of one output of `svd` (PyTorch's formulas, on the first k = min(m, n)
/// singular vectors).
fn svd_grad(part: SvdPart, sv: &SvdSaved, g: &Tensor) -> Result<Tensor> {
    let (u, s, vh) = (sv.u.get()?, sv.s.get()?, sv.vh.get()?);
    let k = s.shape()[s.ndim() - 1] as i64;
    let (u, vh) = (u.narrow(-1, 0, k)?, vh.narrow(-2, 0, k)?);
    let (m, n) = (u.shape()[u.ndim() - 2], vh.shape()[vh.ndim() - 1]);
    let srow = s.unsqueeze(-2)?;
    let scol = s.unsqueeze(-1)?;
    match part {
        SvdPart::S => matmul(&u.mul(&g.unsqueeze(-2)?)?, &vh),
        SvdPart::U => {
            let gu = g.narrow(-1, 0, k)?;
            let uhgu = matmul(&t(&u)?, &gu)?;
            let skew = uhgu.sub(&t(&uhgu)?)?;
            let core = skew.mul(&gap(&s, true)?)?.mul(&srow)?;
            let mut ga = matmul(&u, &core)?;
            if m > k as usize {
                let gusinv = gu.div(&srow)?;
                ga = ga
                    .add(&gusinv)?
                    .sub(&matmul(&u, &matmul(&t(&u)?, &gusinv)?)?)?;
            }
            matmul(&ga, &vh)
        }
        SvdPart::Vh => {
            let gvh = g.narrow(-2, 0, k)?;
            let v = t(&vh)?;
            let vhgv = matmul(&vh, &t(&gvh)?)?;
            let skew = vhgv.sub(&t(&vhgv)?)?;
            let core = scol.mul(&skew.mul(&gap(&s, true)?)?)?;
            let mut ga = matmul(&core, &vh)?;
            if n > k as usize {
                let sinvgvh = gvh.div(&scol)?;
                ga = ga
                    .add(&sinvgvh)?
                    .sub(&matmul(&matmul(&sinvgvh, &v)?, &vh)?)?;
            }
            matmul(&u, &ga)
        }
    }
}

/// The backward of `P = pinv(A)` (constant rank):
/// `-P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A)`.
fn pinv_grad(a: &Tensor, p: &Tensor, g: &Tensor) -> Result<Tensor> {
    let (pt, gt) = (t(p)?, t(g)?);
    let first = matmul(&matmul(&pt, g)?, &pt)?.neg()?;
    let left = gt.sub(&matmul(&matmul(a, p)?, &gt)?)?;
    let second = matmul(&left, &matmul(p, &pt)?)?;
    let right = gt.sub(&matmul(&gt, &matmul(p, a)?)?)?;
    let third = matmul(&matmul(&pt, p)?, &right)?;
    first.add(&second)?.add(&third)
}
