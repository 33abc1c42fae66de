//! torch.linalg's matrix functions on the `faer` crate: `inv det slogdet solve cholesky
//! qr svd svdvals eigh eigvalsh pinv`, batched over leading dims. The LU and Cholesky
//! functions (`inv det slogdet solve cholesky`) factor in the input's precision, as
//! torch's LAPACK calls do (float32 in f32, float64 in f64); the iterative ones (`qr svd
//! eigh pinv`) read float32 widened to f64. The input is read once
//! (tensor/linalg_stack.rs); each matrix is a view of it that faer's factorizations copy
//! into their own storage (the LU and Cholesky functions factor one copy in place), and
//! the results are written back in the input's dtype. Singular and non-positive-definite
//! inputs raise `LinAlgError` with PyTorch's message. Gradients: tensor/linalg_grad.rs.
//! Captured through tensor/linalg_ops.rs (a direct call breaks).

use super::creation::from_f32;
use super::linalg_grad::{self as lg, LinalgGrad};
use super::linalg_stack::{from_f64_as, rt, Real, Stack};
use super::{DType, Tensor};
use crate::autograd::{self, Saved};
use crate::error::{Error, Result};
use faer::{Mat, MatMut, MatRef, Side};

/// What `linalg.qr(mode=)` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QrMode {
    /// Q is m x k, R is k x n (k = min(m, n)).
    Reduced,
    /// Q is m x m, R is m x n.
    Complete,
    /// Only R (k x n); Q is an empty tensor.
    R,
}

/// An owned copy of a matrix view.
fn owned(m: MatRef<'_, f64>) -> Mat<f64> {
    m.to_owned()
}

fn nan_mat(r: usize, c: usize) -> Mat<f64> {
    Mat::from_fn(r, c, |_, _| f64::NAN)
}

/// Records `node` as the producer of `out` when `a` needs a gradient.
fn record(out: &Tensor, node: impl FnOnce() -> LinalgGrad, inputs: &[&Tensor]) {
    if autograd::needs_grad(inputs) {
        autograd::record(out, autograd::BackwardOp::Linalg(Box::new(node())), inputs);
    }
}

/// The 1-based index of the first exactly zero diagonal entry of `u` (LAPACK's info).
fn zero_pivot<T: Real>(u: MatRef<'_, T>) -> Option<usize> {
    (0..u.nrows().min(u.ncols())).find(|&i| u[(i, i)] == T::ZERO)
}

/// `m`'s LU factors with partial pivoting in a column-major copy: see `lu_in_place`.
fn with_lu<T: Real, R>(
    m: MatRef<'_, T>,
    f: impl FnOnce(MatRef<'_, T>, faer::perm::PermRef<'_, usize>) -> R,
) -> R {
    let mut lu = m.to_owned();
    lu_in_place(lu.as_mut(), f)
}

/// `m`'s LU factors with partial pivoting, factored in place (U on and above the
/// diagonal, L's strictly lower part below it, L's unit diagonal implied), then
/// `f(factors, row permutation)`. faer's `partial_piv_lu` copies L and U out into two
/// more matrices; this skips them. Parallel from `par_from`'s size.
fn lu_in_place<T: Real, R>(
    mut lu: MatMut<'_, T>,
    f: impl FnOnce(MatRef<'_, T>, faer::perm::PermRef<'_, usize>) -> R,
) -> R {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::lu::partial_pivoting::factor;
    let n = lu.nrows();
    let (mut fwd, mut bwd) = (vec![0usize; n], vec![0usize; n]);
    let par = par_from(n);
    let mut mem = MemBuffer::new(factor::lu_in_place_scratch::<usize, T>(
        n,
        n,
        par,
        Default::default(),
    ));
    let (_, perm) = factor::lu_in_place(
        lu.as_mut(),
        &mut fwd,
        &mut bwd,
        par,
        MemStack::new(&mut mem),
        Default::default(),
    );
    f(lu.as_ref(), perm)
}

/// faer's parallelism for an n x n factorization: sequential below n = 1536. On the
/// 2-core machine (AVX-512, session 23, quiet, ms sequential / parallel) LU at n = 1000
/// took 4.3 / 5.5-8.3 (faer's parallel regions hand off through rayon's sleeping
/// workers), Cholesky 3.0 / 2.7-3.9, the inverse 16.7 / 14.4-18.6; at n = 2000 the second
/// core paid for all three (LU 28.7 / 23.3, Cholesky 16.8 / 11.8, inverse 105 / 77).
fn par_from(n: usize) -> faer::Par {
    match n >= 1536 {
        true => faer::get_global_parallelism(),
        false => faer::Par::Seq,
    }
}

/// Whether `a` factors in f64 (float64) rather than f32.
fn wide(a: &Tensor) -> bool {
    a.dtype() == DType::F64
}

/// `inv(A)`.
pub fn inv(a: &Tensor) -> Result<Tensor> {
    let out = if wide(a) {
        inv_in::<f64>(a)?
    } else {
        inv_in::<f32>(a)?
    };
    record(&out, || LinalgGrad::Inv(Saved::new(&out)), &[a]);
    Ok(out)
}

/// `inv(A)` factored in `T`: each matrix of the stack's row-major copy, transposed in
/// place, is A column-major (faer's fastest layout), factored in place as LAPACK's getrf
/// would (the same pivots, so the same singular matrices raise); the inverse, written
/// column-major, is returned as the transposed view of row-major data (PyTorch's inverse
/// has these strides too: `(1, n)`).
fn inv_in<T: Real>(a: &Tensor) -> Result<Tensor> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::lu::partial_pivoting::inverse as lu_inv;
    let mut s = Stack::<T>::square("linalg.inv", a)?;
    let (n, len) = (s.n, s.n * s.n);
    let par = par_from(n);
    let mut vals = vec![T::ZERO; s.count * len];
    for k in 0..s.count {
        let m = &mut s.data[k * len..(k + 1) * len];
        lower_pairs(n, |lo, up| m.swap(lo, up));
        let out = &mut vals[k * len..(k + 1) * len];
        let inverted = lu_in_place(MatMut::from_column_major_slice_mut(m, n, n), |lu, perm| {
            if let Some(i) = zero_pivot(lu) {
                return Err(i);
            }
            let out = MatMut::from_column_major_slice_mut(out, n, n);
            let mut mem = MemBuffer::new(lu_inv::inverse_scratch::<usize, T>(n, par));
            lu_inv::inverse(out, lu, lu, perm, par, MemStack::new(&mut mem));
            Ok(())
        });
        if let Err(i) = inverted {
            return Err(s.fail(
                k,
                &format!(
                    "The diagonal element {} is zero, the inversion could not be completed \
                     because the input matrix is singular.",
                    i + 1
                ),
            ));
        }
    }
    s.write(&[n, n], vals)?.transpose(-2, -1)
}

/// The sign of the row permutation `fwd` (+1 even, -1 odd), by counting cycles.
fn perm_sign(fwd: &[usize]) -> f64 {
    let mut seen = vec![false; fwd.len()];
    let mut odd = false;
    for s in 0..fwd.len() {
        let mut i = s;
        let mut len = 0;
        while !seen[i] {
            seen[i] = true;
            i = fwd[i];
            len += 1;
        }
        if len > 0 && len % 2 == 0 {
            odd = !odd;
        }
    }
    if odd {
        -1.0
    } else {
        1.0
    }
}

/// `(sign, log|det|)` of one square matrix through its LU factors (factored in `T`,
/// the log-sum taken in f64).
fn slogdet_one<T: Real>(m: MatRef<'_, T>) -> (f64, f64) {
    with_lu(m, |u, perm| slogdet_of_lu(u, perm.arrays().0))
}

/// `(sign, log|det|)` from LU factors `u` (U on and above the diagonal) and the row
/// permutation `fwd`.
fn slogdet_of_lu<T: Real>(u: MatRef<'_, T>, fwd: &[usize]) -> (f64, f64) {
    let mut sign = perm_sign(fwd);
    let mut logabs = 0.0;
    for i in 0..u.nrows() {
        let d = u[(i, i)].wide();
        if d.is_nan() {
            return (f64::NAN, f64::NAN);
        }
        if d < 0.0 {
            sign = -sign;
        }
        logabs += d.abs().ln();
    }
    if logabs == f64::NEG_INFINITY {
        sign = 0.0;
    }
    (sign, logabs)
}

/// The `(sign, log|det|)` of every matrix of a stack, and the batch shape they are laid
/// out in.
type SignLogs = (Vec<(f64, f64)>, Vec<usize>);

/// The `(sign, log|det|)` of every matrix of `a` (`op` names errors), factored in the
/// input's precision.
fn slogdets(op: &'static str, a: &Tensor) -> Result<SignLogs> {
    fn run<T: Real>(op: &'static str, a: &Tensor) -> Result<SignLogs> {
        let mut s = Stack::<T>::square(op, a)?;
        let (n, len) = (s.n, s.n * s.n);
        // det(A) = det(A^T): each row-major matrix, read as column-major, is A^T, and
        // factors in place with no transposing copy.
        let pairs = (0..s.count)
            .map(|b| {
                let m = &mut s.data[b * len..(b + 1) * len];
                let at = MatMut::from_column_major_slice_mut(m, n, n);
                lu_in_place(at, |u, perm| slogdet_of_lu(u, perm.arrays().0))
            })
            .collect();
        Ok((pairs, s.batch))
    }
    if wide(a) {
        run::<f64>(op, a)
    } else {
        run::<f32>(op, a)
    }
}

/// `det(A)`.
pub fn det(a: &Tensor) -> Result<Tensor> {
    let (pairs, batch) = slogdets("linalg.det", a)?;
    let vals = pairs.iter().map(|&(sign, l)| sign * l.exp()).collect();
    let out = from_f64_as(vals, &batch, a.dtype())?;
    record(&out, || LinalgGrad::Det(Saved::new(a)), &[a]);
    Ok(out)
}

/// `adj(A)^T`, the gradient of `det(A)`, in f64 from the SVD `A = U S V^T`:
/// `det(U) det(V) U diag(prod_{j != i} s_j) V^T` (defined at a singular A too).
pub fn cofactor(a: &Tensor) -> Result<Tensor> {
    let s = Stack::square("linalg.det", a)?;
    let n = s.n;
    let mut outs = Vec::with_capacity(s.count);
    for (u, sv, v) in svd_mats(&s, false)? {
        let sign = slogdet_one(u.as_ref()).0 * slogdet_one(v.as_ref()).0;
        let others: Vec<f64> = (0..n)
            .map(|i| (0..n).filter(|&j| j != i).map(|j| sv[j]).product())
            .collect();
        outs.push(Mat::from_fn(n, n, |i, j| {
            sign * (0..n)
                .map(|p| u[(i, p)] * others[p] * v[(j, p)])
                .sum::<f64>()
        }));
    }
    s.write_mats(&outs, n, n)
}

/// `slogdet(A)`: `(sign, logabsdet)`; the gradient flows through `logabsdet` (the
/// sign's node, LinalgSlogdetBackward0 as torch's, sends none).
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let (pairs, batch) = slogdets("linalg.slogdet", a)?;
    let (signs, logs): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
    let sign = from_f64_as(signs, &batch, a.dtype())?;
    let logabs = from_f64_as(logs, &batch, a.dtype())?;
    record(&sign, || LinalgGrad::SlogdetSign, &[a]);
    record(&logabs, || LinalgGrad::LogAbsDet(Saved::new(a)), &[a]);
    Ok((sign, logabs))
}

/// `solve(A, B)` for `A [..., n, n]` and `B [..., n, k]` of the same batch shape (the
/// caller broadcasts and lifts a vector `B`): `X = A^-1 B`.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = if wide(a) {
        solve_in::<f64>(a, b)?
    } else {
        solve_in::<f32>(a, b)?
    };
    record(
        &out,
        || LinalgGrad::Solve {
            a: Saved::new(a),
            out: Saved::new(&out),
        },
        &[a, b],
    );
    Ok(out)
}

/// `solve(A, B)` factored in `T`.
fn solve_in<T: Real>(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut s = Stack::<T>::square("linalg.solve", a)?;
    let rhs = Stack::<T>::read("linalg.solve", b)?;
    if rhs.batch != s.batch || rhs.m != s.n {
        return Err(rt(format!(
            "linalg.solve: Incompatible shapes of A and B for the equation AX = B ({}x{} and {}x{})",
            s.n, s.n, rhs.m, rhs.n
        )));
    }
    // Each matrix, transposed in place, is A column-major, factored as LAPACK's getrf.
    let (n, len) = (s.n, s.n * s.n);
    let mut outs = Vec::with_capacity(s.count);
    for k in 0..s.count {
        let m = &mut s.data[k * len..(k + 1) * len];
        lower_pairs(n, |lo, up| m.swap(lo, up));
        let bm = rhs.mat(k);
        let solved = lu_in_place(MatMut::from_column_major_slice_mut(m, n, n), |lu, perm| {
            zero_pivot(lu).is_none().then(|| {
                use faer::dyn_stack::{MemBuffer, MemStack};
                use faer::linalg::lu::partial_pivoting::solve as lu_solve;
                let par = faer::Par::Seq;
                let mut x = bm.to_owned();
                let req = lu_solve::solve_in_place_scratch::<usize, T>(n, x.ncols(), par);
                let mut mem = MemBuffer::new(req);
                lu_solve::solve_in_place(lu, lu, perm, x.as_mut(), par, MemStack::new(&mut mem));
                x
            })
        });
        let Some(x) = solved else {
            let e = s.fail(k, "The solver failed because the input matrix is singular.");
            return Err(Error {
                message: format!("torch.{}", e.message),
                ..e
            });
        };
        outs.push(x);
    }
    s.write_mats(&outs, s.n, rhs.n)
}

/// `linalg.solve(A, B, left)`: PyTorch's shape rules (B is a batch of vectors when it is
/// 1-D or has A's shape without the last dim; batch dims broadcast), through views and
/// `expand` so the gradient reaches A and B; `left=False` solves `XA = B`.
pub fn solve_general(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    if a.ndim() < 2 {
        return Err(rt(
            "linalg.solve: The input tensor A must have at least 2 dimensions.".into(),
        ));
    }
    if !left {
        let at = a.transpose(-2, -1)?;
        if b.ndim() < 2 {
            return Err(rt(
                "linalg.solve: Vector broadcasting of the left hand side is not supported \
                 for left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)"
                    .into(),
            ));
        }
        return solve_general(&at, &b.transpose(-2, -1)?, true)?.transpose(-2, -1);
    }
    let (nd, bd) = (a.ndim(), b.ndim());
    let vector = bd == 1 || (bd == nd - 1 && b.shape() == &a.shape()[..nd - 1]);
    let b2 = if vector { b.unsqueeze(-1)? } else { b.clone() };
    let n = a.shape()[nd - 1];
    let (rows, cols) = (b2.shape()[b2.ndim() - 2], b2.shape()[b2.ndim() - 1]);
    if rows != a.shape()[nd - 2] || a.shape()[nd - 2] != n {
        if a.shape()[nd - 2] != n {
            return Err(rt(format!(
                "linalg.solve: A must be batches of square matrices, but they are {} by {n} \
                 matrices",
                a.shape()[nd - 2]
            )));
        }
        return Err(rt(format!(
            "linalg.solve: Incompatible shapes of A and B for the equation AX = B \
             ({n}x{n} and {rows}x{cols})"
        )));
    }
    let batch = super::shape::broadcast_shapes(
        "linalg.solve",
        &a.shape()[..nd - 2],
        &b2.shape()[..b2.ndim() - 2],
    )?;
    // Only a batch that broadcasts is expanded (an expand to explicit sizes would fix a
    // capture's symbolic sizes).
    let full = |t: &Tensor, r: usize, c: usize| -> Result<Tensor> {
        if t.shape()[..t.ndim() - 2] == batch[..] {
            return Ok(t.clone());
        }
        let req: Vec<i64> = batch.iter().chain(&[r, c]).map(|&d| d as i64).collect();
        t.expand(&req)?.contiguous()
    };
    let x = super::linalg_ops::solve(&full(a, n, n)?, &full(&b2, rows, cols)?)?;
    if vector {
        x.squeeze(Some(-1))
    } else {
        Ok(x)
    }
}

/// Factors `m`'s lower triangle in place into its Cholesky factor L (LAPACK's potrf
/// with uplo='L'; the strictly upper triangle is neither read nor written); Err(the
/// 0-based index of the first non-positive pivot).
fn llt_in_place<T: Real>(m: MatMut<'_, T>) -> std::result::Result<(), usize> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::cholesky::llt::factor::{self as llt, LltError};
    let n = m.nrows();
    let par = par_from(n);
    let mut mem = MemBuffer::new(llt::cholesky_in_place_scratch::<T>(
        n,
        par,
        Default::default(),
    ));
    let stack = MemStack::new(&mut mem);
    match llt::cholesky_in_place(m, Default::default(), par, stack, Default::default()) {
        Ok(_) => Ok(()),
        Err(LltError::NonPositivePivot { index }) => Err(index),
    }
}

/// `cholesky(A, upper)`: the lower factor L of A's lower triangle, or (`upper`) the
/// upper factor U (A = U^T U) of A's upper triangle, as PyTorch reads them.
pub fn cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    let out = if wide(a) {
        cholesky_in::<f64>(a, upper)?
    } else {
        cholesky_in::<f32>(a, upper)?
    };
    record(
        &out,
        || LinalgGrad::Cholesky {
            l: Saved::new(&out),
            upper,
        },
        &[a],
    );
    Ok(out)
}

/// `cholesky(A, upper)` factored in `T`, in place in the stack's row-major copy of A,
/// read column-major (faer's fastest layout). Read so, a matrix is A^T, whose lower
/// triangle is A's upper one: its factor L' is U^T, so the row-major data then holds U.
/// For L, A's lower triangle is first mirrored onto the upper one, so the column-major
/// view's lower triangle is A's; its factor, column-major, is returned as the transposed
/// view of the row-major data (PyTorch's L has these strides too: `(1, n)`).
fn cholesky_in<T: Real>(a: &Tensor, upper: bool) -> Result<Tensor> {
    let mut s = Stack::<T>::square("linalg.cholesky", a)?;
    let (n, len) = (s.n, s.n * s.n);
    for k in 0..s.count {
        let m = &mut s.data[k * len..(k + 1) * len];
        if !upper {
            lower_pairs(n, |lo, up| m[up] = m[lo]);
        }
        if let Err(index) = llt_in_place(MatMut::from_column_major_slice_mut(m, n, n)) {
            return Err(s.fail(
                k,
                &format!(
                    "The factorization could not be completed because the input is not \
                     positive-definite (the leading minor of order {} is not \
                     positive-definite).",
                    index + 1
                ),
            ));
        }
        // Zero the unread triangle (row-major: below the diagonal).
        for r in 0..n {
            m[r * n..r * n + r].fill(T::ZERO);
        }
    }
    let data = std::mem::take(&mut s.data);
    let factor = s.write(&[n, n], data)?;
    match upper {
        true => Ok(factor),
        false => factor.transpose(-2, -1),
    }
}

/// Calls `f(i * n + j, j * n + i)` for every `i > j` of an n x n row-major matrix (the
/// positions of an element below the diagonal and of its mirror image), tile by tile so
/// that both stay in cache: `m.swap` transposes in place, `m[up] = m[lo]` mirrors.
fn lower_pairs(n: usize, mut f: impl FnMut(usize, usize)) {
    const TILE: usize = 32;
    for bi in (0..n).step_by(TILE) {
        for bj in (0..=bi).step_by(TILE) {
            for i in bi..(bi + TILE).min(n) {
                for j in bj..(bj + TILE).min(i) {
                    f(i * n + j, j * n + i);
                }
            }
        }
    }
}

/// `qr(A, mode)`: `(Q, R)`.
pub fn qr(a: &Tensor, mode: QrMode) -> Result<(Tensor, Tensor)> {
    let s = Stack::read("linalg.qr", a)?;
    let (m, n) = (s.m, s.n);
    let k = m.min(n);
    let (mut qs, mut rs) = (Vec::new(), Vec::new());
    for x in s.mats() {
        if k == 0 {
            // An empty matrix: Q is the identity, R is empty.
            let qc = if mode == QrMode::Complete { m } else { 0 };
            qs.push(Mat::from_fn(m, qc, |i, j| f64::from(u8::from(i == j))));
            rs.push(Mat::zeros(if mode == QrMode::Complete { m } else { 0 }, n));
            continue;
        }
        let f = x.qr();
        match mode {
            QrMode::Complete => {
                qs.push(f.compute_Q());
                // R is m x n: the k x n factor over m - k zero rows.
                let r = f.thin_R();
                rs.push(Mat::from_fn(
                    m,
                    n,
                    |i, j| if i < k { r[(i, j)] } else { 0.0 },
                ));
            }
            QrMode::Reduced | QrMode::R => {
                qs.push(f.compute_thin_Q());
                rs.push(owned(f.thin_R()));
            }
        }
    }
    let rrows = if mode == QrMode::Complete { m } else { k };
    let r = s.write_mats(&rs, rrows, n)?;
    let qcols = if mode == QrMode::Complete { m } else { k };
    let qfull = s.write_mats(&qs, m, qcols)?;
    if autograd::needs_grad(&[a]) {
        let (qsv, rsv) = (Saved::new(&qfull), Saved::new(&r));
        if mode != QrMode::R {
            record(
                &qfull,
                || LinalgGrad::Qr(lg::QrPart::Q, qsv.clone(), rsv.clone()),
                &[a],
            );
        }
        record(&r, || LinalgGrad::Qr(lg::QrPart::R, qsv, rsv), &[a]);
    }
    let q = match mode {
        QrMode::R => from_f32(Vec::new(), &[0])?,
        QrMode::Reduced | QrMode::Complete => qfull,
    };
    Ok((q, r))
}

/// One matrix's SVD: U, the singular values, V.
type SvdOne = (Mat<f64>, Vec<f64>, Mat<f64>);

/// The SVD of every matrix: `(U, S, V)` with U m x p and V n x p (p = k, or m and n
/// with `full`), S descending; NaN factors for a non-finite matrix.
fn svd_mats(s: &Stack, full: bool) -> Result<Vec<SvdOne>> {
    let (m, n) = (s.m, s.n);
    let k = m.min(n);
    let (pu, pv) = if full { (m, n) } else { (k, k) };
    let mut out = Vec::with_capacity(s.count);
    for (b, x) in s.mats().enumerate() {
        if k == 0 {
            // An empty matrix: no singular values; identity factors.
            let eye = |r: usize, c: usize| Mat::from_fn(r, c, |i, j| f64::from(u8::from(i == j)));
            out.push((eye(m, pu), Vec::new(), eye(n, pv)));
            continue;
        }
        if !Stack::finite(x) {
            out.push((nan_mat(m, pu), vec![f64::NAN; k], nan_mat(n, pv)));
            continue;
        }
        // factored from a column-major copy (the decomposition reads its input's layout)
        let x = x.to_owned();
        let f = if full { x.svd() } else { x.thin_svd() };
        let f = f.map_err(|_| {
            s.fail(
                b,
                "The algorithm failed to converge because the input matrix is ill-conditioned \
                 or has too many repeated singular values.",
            )
        })?;
        let sv = f.S().column_vector();
        let vals = (0..k).map(|i| sv[i]).collect();
        out.push((owned(f.U()), vals, owned(f.V())));
    }
    Ok(out)
}

/// `svd(A, full_matrices)`: `(U, S, Vh)`.
pub fn svd(a: &Tensor, full: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let s = Stack::read("linalg.svd", a)?;
    let (m, n) = (s.m, s.n);
    let k = m.min(n);
    let (pu, pv) = if full { (m, n) } else { (k, k) };
    let f = svd_mats(&s, full)?;
    let us: Vec<Mat<f64>> = f.iter().map(|t| t.0.clone()).collect();
    let vhs: Vec<Mat<f64>> = f.iter().map(|t| t.2.transpose().to_owned()).collect();
    let u = s.write_mats(&us, m, pu)?;
    let sv = s.write(&[k], f.iter().flat_map(|t| t.1.clone()).collect())?;
    let vh = s.write_mats(&vhs, pv, n)?;
    if autograd::needs_grad(&[a]) {
        let saved = lg::SvdSaved {
            u: Saved::new(&u),
            s: Saved::new(&sv),
            vh: Saved::new(&vh),
        };
        for (i, t) in [&u, &sv, &vh].into_iter().enumerate() {
            let part = [lg::SvdPart::U, lg::SvdPart::S, lg::SvdPart::Vh][i];
            record(t, || LinalgGrad::Svd(part, saved.clone()), &[a]);
        }
    }
    Ok((u, sv, vh))
}

/// `eigh(A, upper)`: ascending eigenvalues and the orthonormal eigenvectors (columns)
/// of the symmetric matrix in A's lower (upper) triangle.
pub fn eigh(a: &Tensor, upper: bool) -> Result<(Tensor, Tensor)> {
    let s = Stack::square("linalg.eigh", a)?;
    let n = s.n;
    let (mut vals, mut vecs) = (Vec::new(), Vec::new());
    for (b, x) in s.mats().enumerate() {
        if n == 0 {
            vecs.push(Mat::zeros(0, 0));
            continue;
        }
        if !Stack::finite(x) {
            vals.extend(std::iter::repeat_n(f64::NAN, n));
            vecs.push(nan_mat(n, n));
            continue;
        }
        let side = if upper { Side::Upper } else { Side::Lower };
        let f = x.to_owned().self_adjoint_eigen(side).map_err(|_| {
            s.fail(
                b,
                "The algorithm failed to converge because the input matrix is ill-conditioned \
                 or has too many repeated eigenvalues.",
            )
        })?;
        let ev = f.S().column_vector();
        vals.extend((0..n).map(|i| ev[i]));
        vecs.push(owned(f.U()));
    }
    let l = s.write(&[n], vals)?;
    let v = s.write_mats(&vecs, n, n)?;
    if autograd::needs_grad(&[a]) {
        let (ls, vs) = (Saved::new(&l), Saved::new(&v));
        record(&l, || LinalgGrad::EighValues(vs.clone()), &[a]);
        record(&v, || LinalgGrad::EighVectors { l: ls, v: vs }, &[a]);
    }
    Ok((l, v))
}

/// `pinv(A)`: the pseudo-inverse through the SVD; singular values at or below
/// `max(atol, rtol * s_max)` count as zero (PyTorch's default: rtol = eps * max(m, n)).
pub fn pinv(a: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
    let s = Stack::read("linalg.pinv", a)?;
    let (m, n) = (s.m, s.n);
    let k = m.min(n);
    let rtol = match (atol, rtol) {
        (_, Some(r)) => r,
        (Some(at), None) if at > 0.0 => 0.0,
        _ => f64::from(f32::EPSILON) * m.max(n) as f64,
    };
    let atol = atol.unwrap_or(0.0);
    let mut outs = Vec::with_capacity(s.count);
    for (u, sv, v) in svd_mats(&s, false)? {
        let smax = sv.first().copied().unwrap_or(0.0);
        let cut = atol.max(rtol * smax);
        let inv: Vec<f64> = sv
            .iter()
            .map(|&x| if x > cut { 1.0 / x } else { 0.0 })
            .collect();
        outs.push(Mat::from_fn(n, m, |i, j| {
            (0..k).map(|p| v[(i, p)] * inv[p] * u[(j, p)]).sum()
        }));
    }
    let out = s.write_mats(&outs, n, m)?;
    record(
        &out,
        || LinalgGrad::Pinv {
            a: Saved::new(a),
            out: Saved::new(&out),
        },
        &[a],
    );
    Ok(out)
}
