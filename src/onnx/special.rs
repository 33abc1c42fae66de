//! ONNX composites of the special functions ONNX lacks: `erfinv` as Giles' polynomial
//! (tensor/kernels/special.rs) over ONNX ops, both branches computed and one `Where`.

use super::lower::Lower;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::kernels::special::{ERFINV_CENTRAL, ERFINV_TAIL};

fn c(l: &mut Lower, v: f64) -> String {
    l.b.const_scalar(Scalar::Float(v), DType::F32)
}

/// Horner's scheme for the coefficients `k` (highest degree first) at `w`.
fn poly(l: &mut Lower, k: &[f64], w: &str) -> String {
    let mut p = c(l, k[0]);
    for &kk in &k[1..] {
        let m = l.b.op("Mul", &[&p, w], vec![]);
        let a = c(l, kk);
        p = l.b.op("Add", &[&m, &a], vec![]);
    }
    p
}

/// `erfinv(x)` without the eager kernel's Newton steps (float32 accuracy of the
/// polynomial, a few ulp).
pub fn erfinv(l: &mut Lower, x: &str) -> String {
    let one = c(l, 1.0);
    let lo = l.b.op("Sub", &[&one, x], vec![]);
    let hi = l.b.op("Add", &[&one, x], vec![]);
    let prod = l.b.op("Mul", &[&lo, &hi], vec![]);
    let ln = l.b.op("Log", &[&prod], vec![]);
    let w = l.b.op("Neg", &[&ln], vec![]);
    let (five, half5, three) = (c(l, 5.0), c(l, 2.5), c(l, 3.0));
    let wc = l.b.op("Sub", &[&w, &half5], vec![]);
    let central = poly(l, &ERFINV_CENTRAL, &wc);
    let sq = l.b.op("Sqrt", &[&w], vec![]);
    let wt = l.b.op("Sub", &[&sq, &three], vec![]);
    let tail = poly(l, &ERFINV_TAIL, &wt);
    let small = l.b.op("Less", &[&w, &five], vec![]);
    let p = l.b.op("Where", &[&small, &central, &tail], vec![]);
    l.b.op("Mul", &[&p, x], vec![])
}
