//! Per-lane f64 math in Cranelift IR for the rarer ops: pow, floor-div, mod, sin, cos.
//!
//! Each f32 lane is widened to f64, computed with enough precision that the final
//! rounding to f32 dominates the error, and inserted back. No libcalls.

use crate::compile::jit::trig_table::TWO_OVER_PI_MOD4;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, F64, I32, I64};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

/// Applies `f` to each lane of the f32x4 arguments (as f32 scalars) and gathers the f64
/// results, rounded to f32, into an f32x4.
pub(crate) fn per_lane(
    b: &mut FunctionBuilder,
    args: &[Value],
    f: fn(&mut Sx, &[Value]) -> Value,
) -> Value {
    let zero = b.ins().f32const(0.0);
    let mut out = b.ins().splat(F32X4, zero);
    for lane in 0..4u8 {
        let lanes: Vec<Value> = args.iter().map(|&a| b.ins().extractlane(a, lane)).collect();
        let r = f(&mut Sx { b: &mut *b }, &lanes);
        let r = b.ins().fdemote(F32, r);
        out = b.ins().insertlane(out, r, lane);
    }
    out
}

/// An emitter of scalar f64 arithmetic (conditions are i8).
pub(crate) struct Sx<'a, 'b> {
    pub b: &'a mut FunctionBuilder<'b>,
}

impl Sx<'_, '_> {
    fn c(&mut self, v: f64) -> Value {
        self.b.ins().f64const(v)
    }
    fn widen(&mut self, x: Value) -> Value {
        self.b.ins().fpromote(F64, x)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fadd(a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fsub(a, b)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fmul(a, b)
    }
    fn div(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fdiv(a, b)
    }
    fn mla(&mut self, a: Value, b: Value, c: Value) -> Value {
        let p = self.mul(a, b);
        self.add(p, c)
    }
    fn poly(&mut self, x: Value, coeffs: &[f64]) -> Value {
        let mut acc = self.c(coeffs[0]);
        for &k in &coeffs[1..] {
            let kv = self.c(k);
            acc = self.mla(acc, x, kv);
        }
        acc
    }
    fn cmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        self.b.ins().fcmp(cc, a, b)
    }
    fn cmp_c(&mut self, cc: FloatCC, a: Value, k: f64) -> Value {
        let kv = self.c(k);
        self.cmp(cc, a, kv)
    }
    fn sel(&mut self, c: Value, a: Value, b: Value) -> Value {
        self.b.ins().select(c, a, b)
    }
    fn sel_c(&mut self, c: Value, k: f64, b: Value) -> Value {
        let kv = self.c(k);
        self.sel(c, kv, b)
    }
    fn and(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().band(a, b)
    }
    fn not(&mut self, a: Value) -> Value {
        self.b.ins().bnot(a)
    }
    /// +0.0 or -0.0 with the sign of `x`.
    fn signed_zero(&mut self, x: Value) -> Value {
        let bits = self.b.ins().bitcast(I64, MemFlagsData::new(), x);
        let s = self.b.ins().band_imm_s(bits, i64::MIN);
        self.b.ins().bitcast(F64, MemFlagsData::new(), s)
    }
}

/// ln(m) for m in [sqrt(1/2), sqrt(2)] by the atanh series (error < 1e-12).
fn ln_reduced(s: &mut Sx, m: Value) -> Value {
    let one = s.c(1.0);
    let num = s.sub(m, one);
    let den = s.add(m, one);
    let t = s.div(num, den);
    let t2 = s.mul(t, t);
    let coeffs: Vec<f64> = (0..9).rev().map(|k| 1.0 / (2 * k + 1) as f64).collect();
    let p = s.poly(t2, &coeffs);
    let two_t = s.add(t, t);
    s.mul(two_t, p)
}

/// log2(ax) for ax >= 0 (0 gives -inf, inf gives inf, NaN stays NaN).
fn log2_abs(s: &mut Sx, ax: Value) -> Value {
    let bits = s.b.ins().bitcast(I64, MemFlagsData::new(), ax);
    let e = s.b.ins().ushr_imm_s(bits, 52);
    let e = s.b.ins().iadd_imm_s(e, -1023);
    let e = s.b.ins().fcvt_from_sint(F64, e);
    let m = s.b.ins().band_imm_s(bits, 0x000f_ffff_ffff_ffff);
    let m = s.b.ins().bor_imm_s(m, 0x3ff0_0000_0000_0000);
    let m = s.b.ins().bitcast(F64, MemFlagsData::new(), m);
    let big = s.cmp_c(FloatCC::GreaterThan, m, std::f64::consts::SQRT_2);
    let half = s.c(0.5);
    let m_half = s.mul(m, half);
    let m = s.sel(big, m_half, m);
    let one = s.c(1.0);
    let zero = s.c(0.0);
    let inc = s.sel(big, one, zero);
    let e = s.add(e, inc);
    let l = ln_reduced(s, m);
    let log2e = s.c(std::f64::consts::LOG2_E);
    let r = s.mla(l, log2e, e);
    let is_zero = s.cmp_c(FloatCC::Equal, ax, 0.0);
    let r = s.sel_c(is_zero, f64::NEG_INFINITY, r);
    let is_inf = s.cmp_c(FloatCC::Equal, ax, f64::INFINITY);
    let r = s.sel_c(is_inf, f64::INFINITY, r);
    let is_nan = s.cmp(FloatCC::Unordered, ax, ax);
    s.sel(is_nan, ax, r)
}

/// 2^t (inf above 400, 0 below -400, NaN stays NaN).
fn exp2(s: &mut Sx, t: Value) -> Value {
    let lo = s.c(-400.0);
    let hi = s.c(400.0);
    let t = s.b.ins().fmax(t, lo);
    let t = s.b.ins().fmin(t, hi);
    let n = s.b.ins().nearest(t);
    let f = s.sub(t, n);
    let ln2 = s.c(std::f64::consts::LN_2);
    let g = s.mul(f, ln2);
    let mut fact = 1.0f64;
    let mut coeffs = vec![1.0f64];
    for k in 1..=11 {
        fact *= k as f64;
        coeffs.push(1.0 / fact);
    }
    coeffs.reverse();
    let p = s.poly(g, &coeffs);
    let ni = s.b.ins().fcvt_to_sint_sat(I64, n);
    let e = s.b.ins().iadd_imm_s(ni, 1023);
    let e = s.b.ins().ishl_imm_s(e, 52);
    let scale = s.b.ins().bitcast(F64, MemFlagsData::new(), e);
    let tiny = s.cmp_c(FloatCC::LessThan, t, -399.0);
    let r = s.mul(p, scale);
    s.sel_c(tiny, 0.0, r)
}

/// C99 `pow` semantics on f32 lanes, computed as 2^(y log2|x|) in f64.
pub(crate) fn pow(s: &mut Sx, a: &[Value]) -> Value {
    let x = s.widen(a[0]);
    let y = s.widen(a[1]);
    let ax = s.b.ins().fabs(x);
    let l = log2_abs(s, ax);
    let t = s.mul(y, l);
    let r = exp2(s, t);
    let fy = s.b.ins().floor(y);
    let y_int = s.cmp(FloatCC::Equal, fy, y);
    let half = s.c(0.5);
    let hy = s.mul(y, half);
    let fhy = s.b.ins().floor(hy);
    let y_even = s.cmp(FloatCC::Equal, fhy, hy);
    let not_even = s.not(y_even);
    let y_odd = s.and(y_int, not_even);
    let xbits = s.b.ins().bitcast(I64, MemFlagsData::new(), x);
    let x_signed = s.b.ins().icmp_imm_s(IntCC::SignedLessThan, xbits, 0);
    let flip = s.and(x_signed, y_odd);
    let nr = s.b.ins().fneg(r);
    let r = s.sel(flip, nr, r);
    let x_neg = s.cmp_c(FloatCC::LessThan, x, 0.0);
    let x_fin = s.cmp_c(FloatCC::LessThan, ax, f64::INFINITY);
    let not_int = s.not(y_int);
    let bad = s.and(x_neg, x_fin);
    let bad = s.and(bad, not_int);
    let r = s.sel_c(bad, f64::NAN, r);
    let ay = s.b.ins().fabs(y);
    let y_inf = s.cmp_c(FloatCC::Equal, ay, f64::INFINITY);
    let x_m1 = s.cmp_c(FloatCC::Equal, x, -1.0);
    let m1_inf = s.and(x_m1, y_inf);
    let r = s.sel_c(m1_inf, 1.0, r);
    let y_zero = s.cmp_c(FloatCC::Equal, y, 0.0);
    let r = s.sel_c(y_zero, 1.0, r);
    let x_one = s.cmp_c(FloatCC::Equal, x, 1.0);
    s.sel_c(x_one, 1.0, r)
}

/// CPython's float divmod on one lane (fmod as `a - trunc(a/b)*b`, exact while
/// |a/b| < 2^29). Returns (floor quotient, remainder).
fn divmod(s: &mut Sx, a: &[Value]) -> (Value, Value) {
    let x = s.widen(a[0]);
    let y = s.widen(a[1]);
    let q = s.div(x, y);
    let tq = s.b.ins().trunc(q);
    let ty = s.mul(tq, y);
    let m = s.sub(x, ty);
    let ay = s.b.ins().fabs(y);
    let ax = s.b.ins().fabs(x);
    let y_inf = s.cmp_c(FloatCC::Equal, ay, f64::INFINITY);
    let x_fin = s.cmp_c(FloatCC::LessThan, ax, f64::INFINITY);
    let keep_x = s.and(y_inf, x_fin);
    let m = s.sel(keep_x, x, m);
    let xm = s.sub(x, m);
    let div = s.div(xm, y);
    let m_nz = s.cmp_c(FloatCC::NotEqual, m, 0.0);
    let y_neg = s.cmp_c(FloatCC::LessThan, y, 0.0);
    let m_neg = s.cmp_c(FloatCC::LessThan, m, 0.0);
    let differ = s.b.ins().bxor(y_neg, m_neg);
    let adj = s.and(m_nz, differ);
    let my = s.add(m, y);
    let m2 = s.sel(adj, my, m);
    let one = s.c(1.0);
    let d1 = s.sub(div, one);
    let div = s.sel(adj, d1, div);
    let yz = s.signed_zero(y);
    let m2 = s.sel(m_nz, m2, yz);
    let fl = s.b.ins().floor(div);
    let frac = s.sub(div, fl);
    let round_up = s.cmp_c(FloatCC::GreaterThan, frac, 0.5);
    let fl1 = s.add(fl, one);
    let fl = s.sel(round_up, fl1, fl);
    let d_nz = s.cmp_c(FloatCC::NotEqual, div, 0.0);
    let qz = s.signed_zero(q);
    let fd = s.sel(d_nz, fl, qz);
    let y_zero = s.cmp_c(FloatCC::Equal, y, 0.0);
    let fd = s.sel(y_zero, q, fd);
    (fd, m2)
}

pub(crate) fn floor_div(s: &mut Sx, a: &[Value]) -> Value {
    divmod(s, a).0
}

pub(crate) fn modulo(s: &mut Sx, a: &[Value]) -> Value {
    divmod(s, a).1
}

pub(crate) fn sin(s: &mut Sx, a: &[Value]) -> Value {
    sincos(s, a[0], false)
}

pub(crate) fn cos(s: &mut Sx, a: &[Value]) -> Value {
    sincos(s, a[0], true)
}

/// sin/cos with exact Payne-Hanek style reduction: |x| = k * 2^s with a 24-bit k, and a
/// table of (2^s * 2/pi) mod 4 in three exact-product parts.
fn sincos(s: &mut Sx, x: Value, cosine: bool) -> Value {
    let xb = s.b.ins().bitcast(I32, MemFlagsData::new(), x);
    let ab = s.b.ins().band_imm_s(xb, 0x7fff_ffff);
    let e = s.b.ins().ushr_imm_s(ab, 23);
    let mant = s.b.ins().band_imm_s(ab, 0x007f_ffff);
    let normal = s.b.ins().icmp_imm_s(IntCC::NotEqual, e, 0);
    let implicit = s.b.ins().bor_imm_s(mant, 0x0080_0000);
    let k = s.sel(normal, implicit, mant);
    let em1 = s.b.ins().iadd_imm_s(e, -1);
    let zero_i = s.b.ins().iconst(I32, 0);
    let row = s.sel(normal, em1, zero_i);
    let row = s.b.ins().uextend(I64, row);
    let row = s.b.ins().imul_imm_s(row, 24);
    let base = s.b.ins().iconst(I64, TWO_OVER_PI_MOD4.as_ptr() as i64);
    let addr = s.b.ins().iadd(base, row);
    let flags = MemFlagsData::new().with_notrap().with_readonly();
    let w: Vec<Value> = (0..3)
        .map(|i| s.b.ins().load(F64, flags, addr, 8 * i))
        .collect();
    let kf = s.b.ins().fcvt_from_sint(F64, k);
    let y1 = s.mul(kf, w[0]);
    let quarter = s.c(0.25);
    let yq = s.mul(y1, quarter);
    let yq = s.b.ins().floor(yq);
    let four = s.c(4.0);
    let whole = s.mul(yq, four);
    let y1 = s.sub(y1, whole);
    let y2 = s.mul(kf, w[1]);
    let y3 = s.mul(kf, w[2]);
    let y12 = s.add(y1, y2);
    let n = s.b.ins().nearest(y12);
    let f = s.sub(y1, n);
    let f = s.add(f, y2);
    let f = s.add(f, y3);
    let pio2 = s.c(std::f64::consts::FRAC_PI_2);
    let r = s.mul(f, pio2);
    let q = s.b.ins().fcvt_to_sint_sat(I32, n);
    let q = s.b.ins().iadd_imm_s(q, i64::from(cosine));
    quadrant(s, r, q, xb, cosine, e)
}

/// Picks ±sin(r) or ±cos(r) by quadrant `q`; sine is odd in x; inf/NaN give NaN.
fn quadrant(s: &mut Sx, r: Value, q: Value, xb: Value, cosine: bool, e: Value) -> Value {
    let r2 = s.mul(r, r);
    let sp = s.poly(
        r2,
        &[
            1.0 / 6_227_020_800.0,
            -1.0 / 39_916_800.0,
            1.0 / 362_880.0,
            -1.0 / 5040.0,
            1.0 / 120.0,
            -1.0 / 6.0,
        ],
    );
    let rr2 = s.mul(r, r2);
    let sr = s.mla(rr2, sp, r);
    let cp = s.poly(
        r2,
        &[
            1.0 / 479_001_600.0,
            -1.0 / 3_628_800.0,
            1.0 / 40320.0,
            -1.0 / 720.0,
            1.0 / 24.0,
            -0.5,
            1.0,
        ],
    );
    let odd = s.b.ins().band_imm_s(q, 1);
    let odd = s.b.ins().icmp_imm_s(IntCC::NotEqual, odd, 0);
    let v = s.sel(odd, cp, sr);
    let half = s.b.ins().band_imm_s(q, 2);
    let half = s.b.ins().icmp_imm_s(IntCC::NotEqual, half, 0);
    let nv = s.b.ins().fneg(v);
    let mut v = s.sel(half, nv, v);
    if !cosine {
        let neg = s.b.ins().icmp_imm_s(IntCC::SignedLessThan, xb, 0);
        let nv = s.b.ins().fneg(v);
        v = s.sel(neg, nv, v);
    }
    let special = s.b.ins().icmp_imm_s(IntCC::Equal, e, 255);
    s.sel_c(special, f64::NAN, v)
}
