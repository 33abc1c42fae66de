//! The captured entry points of torch.linalg's matrix functions: each runs its kernel in
//! tensor/linalg_decomp.rs (and the autograd node that records) through `record_op`, so
//! a `@compile` capture records it as one `IrOp::Linalg` node, which the executor runs
//! by calling the same kernel (`run`). A function with several results (`slogdet`, `qr`,
//! `svd`, `eigh`) records one node per result, each naming its part: the executor
//! factors once for the parts a graph uses (tensor/parts_memo.rs; DCE drops the unused). Their gradient
//! rules (tensor/linalg_grad.rs) call these entry points too, so a compiled backward
//! records them as graph ops. The sym analysis follows their sizes as `out_shape` does
//! (compile/sym/linalg.rs); qr's and svd's are specialised.

use super::linalg_decomp::{self as ld, QrMode};
use super::parts_memo::{self, Whole};
use super::{DType, Tensor};
use crate::error::{ErrorKind, Result};
use crate::ir::record_op::{record_op, record_parts};
use crate::ir::IrOp;

/// One matrix function (or one result of one), as an IR op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LinalgOp {
    Inv,
    Det,
    /// `det`'s gradient matrix (tensor/linalg_decomp.rs `cofactor`).
    Cofactor,
    /// Result `part` of `slogdet`: 0 the sign, 1 log|det|.
    Slogdet {
        part: usize,
    },
    /// `solve(A, B)` of matching batch shapes (linalg_decomp's `solve`; `linalg.solve`'s
    /// broadcasting around it records as ordinary ops).
    Solve,
    Cholesky {
        upper: bool,
    },
    /// Result `part` of `qr`: 0 Q, 1 R.
    Qr {
        mode: QrMode,
        part: usize,
    },
    /// Result `part` of `svd`: 0 U, 1 S, 2 Vh.
    Svd {
        full: bool,
        part: usize,
    },
    /// Result `part` of `eigh`: 0 the eigenvalues, 1 the eigenvectors.
    Eigh {
        upper: bool,
        part: usize,
    },
    Pinv {
        atol: Option<f64>,
        rtol: Option<f64>,
    },
    /// The gap matrix of the eigh/svd gradients (tensor/linalg_grad.rs `gap_inverse`).
    GapInverse {
        squares: bool,
    },
}

impl LinalgOp {
    /// The op's name in dumps and errors (PyTorch's function name).
    pub fn name(&self) -> &'static str {
        match self {
            LinalgOp::Inv => "linalg.inv",
            LinalgOp::Det => "linalg.det",
            LinalgOp::Cofactor => "linalg.det_backward",
            LinalgOp::Slogdet { .. } => "linalg.slogdet",
            LinalgOp::Solve => "linalg.solve",
            LinalgOp::Cholesky { .. } => "linalg.cholesky",
            LinalgOp::Qr { .. } => "linalg.qr",
            LinalgOp::Svd { .. } => "linalg.svd",
            LinalgOp::Eigh { .. } => "linalg.eigh",
            LinalgOp::Pinv { .. } => "linalg.pinv",
            LinalgOp::GapInverse { .. } => "linalg.eig_gap_inverse",
        }
    }

    /// How many tensor args the op takes.
    pub fn arity(&self) -> usize {
        match self {
            LinalgOp::Solve => 2,
            _ => 1,
        }
    }

    /// The result's dtype for an input of dtype `dt` (the kernels write float64 as
    /// float64, anything else as float32; `qr(mode='r')`'s empty Q is float32).
    pub fn out_dtype(&self, dt: DType) -> DType {
        match self {
            LinalgOp::Qr {
                mode: QrMode::R,
                part: 0,
            } => DType::F32,
            _ if dt == DType::F64 => DType::F64,
            _ => DType::F32,
        }
    }

    /// The result's shape from the args' shapes, where it follows them alone (None for
    /// the factorizations whose result sizes depend on the mode).
    pub fn out_shape(&self, a: &[&[usize]]) -> Option<Vec<usize>> {
        let x = *a.first()?;
        let nd = x.len();
        if let LinalgOp::GapInverse { .. } = self {
            return Some([x, x.get(nd.checked_sub(1)?..)?].concat());
        }
        let batch = x.get(..nd.checked_sub(2)?)?;
        match self {
            LinalgOp::Inv | LinalgOp::Cofactor | LinalgOp::Cholesky { .. } => Some(x.to_vec()),
            LinalgOp::Det | LinalgOp::Slogdet { .. } => Some(batch.to_vec()),
            LinalgOp::Solve => a.get(1).map(|b| b.to_vec()),
            LinalgOp::Pinv { .. } => Some([batch, &[x[nd - 1], x[nd - 2]]].concat()),
            LinalgOp::Eigh { part: 0, .. } => Some(x[..nd - 1].to_vec()),
            LinalgOp::Eigh { .. } => Some(x.to_vec()),
            LinalgOp::Qr { .. } | LinalgOp::Svd { .. } | LinalgOp::GapInverse { .. } => None,
        }
    }
}

fn linalg(op: LinalgOp) -> impl FnOnce(&Tensor) -> IrOp {
    move |_| IrOp::Linalg(op)
}

/// `inv(A)`.
pub fn inv(a: &Tensor) -> Result<Tensor> {
    record_op(&[a], linalg(LinalgOp::Inv), || ld::inv(a))
}

/// `det(A)`.
pub fn det(a: &Tensor) -> Result<Tensor> {
    record_op(&[a], linalg(LinalgOp::Det), || ld::det(a))
}

/// `det`'s gradient matrix.
pub fn cofactor(a: &Tensor) -> Result<Tensor> {
    record_op(&[a], linalg(LinalgOp::Cofactor), || ld::cofactor(a))
}

/// `slogdet(A)`: `(sign, logabsdet)`.
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let parts = record_parts(
        &[a],
        |part| IrOp::Linalg(LinalgOp::Slogdet { part }),
        || ld::slogdet(a).map(|(s, l)| vec![s, l]),
    )?;
    let [s, l] = take(parts)?;
    Ok((s, l))
}

/// `solve(A, B)` of matching batch shapes.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    record_op(&[a, b], linalg(LinalgOp::Solve), || ld::solve(a, b))
}

/// `cholesky(A, upper)`.
pub fn cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    record_op(&[a], linalg(LinalgOp::Cholesky { upper }), || {
        ld::cholesky(a, upper)
    })
}

/// `qr(A, mode)`: `(Q, R)`.
pub fn qr(a: &Tensor, mode: QrMode) -> Result<(Tensor, Tensor)> {
    let parts = record_parts(
        &[a],
        |part| IrOp::Linalg(LinalgOp::Qr { mode, part }),
        || ld::qr(a, mode).map(|(q, r)| vec![q, r]),
    )?;
    let [q, r] = take(parts)?;
    Ok((q, r))
}

/// `svd(A, full_matrices)`: `(U, S, Vh)`.
pub fn svd(a: &Tensor, full: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let parts = record_parts(
        &[a],
        |part| IrOp::Linalg(LinalgOp::Svd { full, part }),
        || ld::svd(a, full).map(|(u, s, vh)| vec![u, s, vh]),
    )?;
    let [u, s, vh] = take(parts)?;
    Ok((u, s, vh))
}

/// `svdvals(A)`: the S of the reduced `svd` (U and Vh are recorded too: S's gradient
/// reads them; unused otherwise, they are dropped from a compiled forward).
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    Ok(svd(a, false)?.1)
}

/// `eigh(A, upper)`: `(eigenvalues, eigenvectors)`.
pub fn eigh(a: &Tensor, upper: bool) -> Result<(Tensor, Tensor)> {
    let parts = record_parts(
        &[a],
        |part| IrOp::Linalg(LinalgOp::Eigh { upper, part }),
        || ld::eigh(a, upper).map(|(l, v)| vec![l, v]),
    )?;
    let [l, v] = take(parts)?;
    Ok((l, v))
}

/// `pinv(A, atol, rtol)`.
pub fn pinv(a: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
    record_op(&[a], linalg(LinalgOp::Pinv { atol, rtol }), || {
        ld::pinv(a, atol, rtol)
    })
}

/// The results of a multi-result kernel as an array.
fn take<const N: usize>(parts: Vec<Tensor>) -> Result<[Tensor; N]> {
    parts.try_into().map_err(|_| {
        super::err(
            ErrorKind::RuntimeError,
            "linalg: a factorization returned the wrong number of results",
        )
    })
}

/// Result `part` of a multi-result kernel.
/// Runs `op` on `args` (the executor of `IrOp::Linalg`): the same kernels as eager.
pub fn run(op: LinalgOp, args: &[&Tensor]) -> Result<Tensor> {
    let arg = |k: usize| {
        args.get(k).copied().ok_or_else(|| {
            super::err(
                ErrorKind::RuntimeError,
                format!("{}: missing argument {k}", op.name()),
            )
        })
    };
    let a = arg(0)?;
    match op {
        LinalgOp::Inv => ld::inv(a),
        LinalgOp::Det => ld::det(a),
        LinalgOp::Cofactor => ld::cofactor(a),
        LinalgOp::Slogdet { part } => parts_memo::part_of(
            Whole::Linalg(LinalgOp::Slogdet { part: 0 }),
            part,
            &[a],
            || ld::slogdet(a).map(|(s, l)| vec![s, l]),
        ),
        LinalgOp::Solve => ld::solve(a, arg(1)?),
        LinalgOp::Cholesky { upper } => ld::cholesky(a, upper),
        LinalgOp::Qr { mode, part } => parts_memo::part_of(
            Whole::Linalg(LinalgOp::Qr { mode, part: 0 }),
            part,
            &[a],
            || ld::qr(a, mode).map(|(q, r)| vec![q, r]),
        ),
        LinalgOp::Svd { full, part } => parts_memo::part_of(
            Whole::Linalg(LinalgOp::Svd { full, part: 0 }),
            part,
            &[a],
            || ld::svd(a, full).map(|(u, s, vh)| vec![u, s, vh]),
        ),
        LinalgOp::Eigh { upper, part } => parts_memo::part_of(
            Whole::Linalg(LinalgOp::Eigh { upper, part: 0 }),
            part,
            &[a],
            || ld::eigh(a, upper).map(|(l, v)| vec![l, v]),
        ),
        LinalgOp::Pinv { atol, rtol } => ld::pinv(a, atol, rtol),
        LinalgOp::GapInverse { squares } => super::linalg_grad::gap_inverse(a, squares),
    }
}
