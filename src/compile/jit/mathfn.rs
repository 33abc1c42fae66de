//! Inline f32x4 math in Cranelift IR: exp, log, tanh, sigmoid, erf and small helpers.
//!
//! Cody-Waite range reduction plus minimax polynomials evaluated with FMA; no libcalls.
//! exp, sigmoid, tanh and erf share one exp split ([`exp_split`]; GELU in mathgelu.rs
//! its rounding constant and scale) whose power of two is shifted out of the rounding
//! constant's bits. Special values (±inf, NaN, overflow,
//! underflow, zero, subnormals) are handled with clamps (single `minps`/`maxps` that keep
//! NaN) and lane selects.
// Coefficients are written with all the digits they were published or fitted with.
#![allow(clippy::excessive_precision)]

use crate::compile::jit::consts::Consts;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::types::{F32X4, F64, F64X2, I32X4, I64, I64X2};
use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, Signature, Value};
use cranelift_frontend::FunctionBuilder;

/// An emitter of f32x4 arithmetic (masks are i32x4 all-ones/all-zeros lanes), or of
/// f64x2 arithmetic in an f64 kernel (`k.wide`; masks i64x2): the arithmetic, compare,
/// select and constant helpers follow the kernel's type, the math routines of this file
/// are f32x4 only. Constants come from the kernel's constant table (one load per use,
/// which the backend folds into the using instruction as a memory operand).
pub(crate) struct Vx<'a, 'b> {
    pub b: &'a mut FunctionBuilder<'b>,
    pub k: &'a mut Consts,
}

impl Vx<'_, '_> {
    /// The constant `v` in the kernel's float type.
    pub fn c(&mut self, v: f32) -> Value {
        if self.k.wide {
            return self.c64(f64::from(v));
        }
        self.k.load(self.b, F32X4, v.to_bits())
    }
    /// The constant `v` in the kernel's float type (rounded to f32 in an f32 kernel).
    pub fn c64(&mut self, v: f64) -> Value {
        if self.k.wide {
            return self.k.load_wide(self.b, F64X2, v.to_bits());
        }
        self.c(v as f32)
    }
    /// `f(lane...)` for each lane of the f64x2 arguments: a call of the native function
    /// at `addr` (`extern "C" fn(f64, ...) -> f64`) per lane.
    pub fn call(&mut self, addr: usize, args: &[Value]) -> Value {
        let mut sig = Signature::new(self.b.func.signature.call_conv);
        sig.params.extend(args.iter().map(|_| AbiParam::new(F64)));
        sig.returns.push(AbiParam::new(F64));
        let sig = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(I64, addr as i64);
        let zero = self.b.ins().f64const(0.0);
        let mut out = self.b.ins().splat(F64X2, zero);
        for lane in 0..2u8 {
            let lanes: Vec<Value> = args
                .iter()
                .map(|&a| self.b.ins().extractlane(a, lane))
                .collect();
            let call = self.b.ins().call_indirect(sig, callee, &lanes);
            let r = self.b.inst_results(call)[0];
            out = self.b.ins().insertlane(out, r, lane);
        }
        out
    }
    pub fn ci(&mut self, v: i32) -> Value {
        self.k.load(self.b, I32X4, v.cast_unsigned())
    }
    pub fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fadd(a, b)
    }
    pub fn sub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fsub(a, b)
    }
    pub fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fmul(a, b)
    }
    pub fn div(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fdiv(a, b)
    }
    /// `a * b + c`: one fused rounding where the host has FMA, else two.
    pub fn mla(&mut self, a: Value, b: Value, c: Value) -> Value {
        if self.k.fma {
            return self.b.ins().fma(a, b, c);
        }
        let p = self.mul(a, b);
        self.add(p, c)
    }
    /// Horner evaluation; `coeffs` from the highest degree down.
    pub fn poly(&mut self, x: Value, coeffs: &[f32]) -> Value {
        let Some((&first, rest)) = coeffs.split_first() else {
            return self.c(0.0);
        };
        if let Some((&second, rest)) = rest.split_first() {
            // The leading coefficient multiplies `x` straight from the table.
            let k1 = self.c(first);
            let k2 = self.c(second);
            let mut acc = self.mla(x, k1, k2);
            for &k in rest {
                let kv = self.c(k);
                acc = self.mla(acc, x, kv);
            }
            return acc;
        }
        self.c(first)
    }
    pub fn cmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        self.b.ins().fcmp(cc, a, b)
    }
    pub fn cmp_c(&mut self, cc: FloatCC, a: Value, k: f32) -> Value {
        let kv = self.c(k);
        self.cmp(cc, a, kv)
    }
    pub fn bits(&mut self, x: Value) -> Value {
        let ty = if self.k.wide { I64X2 } else { I32X4 };
        self.b.ins().bitcast(ty, MemFlagsData::new(), x)
    }
    pub fn float(&mut self, x: Value) -> Value {
        let ty = if self.k.wide { F64X2 } else { F32X4 };
        self.b.ins().bitcast(ty, MemFlagsData::new(), x)
    }
    /// `a` where `mask`, else `b`.
    pub fn sel(&mut self, mask: Value, a: Value, b: Value) -> Value {
        let m = self.float(mask);
        self.b.ins().bitselect(m, a, b)
    }
    /// 1.0 where `mask`, else 0.0.
    pub fn mask_to_f32(&mut self, mask: Value) -> Value {
        let one = if self.k.wide {
            self.k.load_wide(self.b, I64X2, 1.0f64.to_bits())
        } else {
            self.ci(1.0f32.to_bits().cast_signed())
        };
        let m = self.b.ins().band(mask, one);
        self.float(m)
    }
    /// `mag` (non-negative) with the sign bit of `sign`.
    pub fn copysign(&mut self, mag: Value, sign: Value) -> Value {
        let sb = self.bits(sign);
        let smask = self.ci(i32::MIN);
        let s = self.b.ins().band(sb, smask);
        let m = self.bits(mag);
        let r = self.b.ins().bor(m, s);
        self.float(r)
    }
}

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// 1.5 * 2^23: adding it rounds an f32 of magnitude < 2^22 to an integer held in the low
/// mantissa bits.
const MAGIC: f32 = 12_582_912.0;

/// `e^r = 1 + r * Q(r)` on `[-ln2/2, ln2/2]`; Q's coefficients from degree 5 down
/// (Lawson minimax for the relative error, rounded to f32: 7.0e-8 relative with f32 FMA
/// Horner, i.e. under 1.2 half-ulps, before the range reduction's rounding).
const EXP_Q: [f32; 6] = [
    1.384_359_668_008_983_1e-3,
    8.374_195_545_911_789e-3,
    4.166_800_528_764_725e-2,
    1.666_643_023_490_905_8e-1,
    4.999_999_403_953_552e-1,
    1.0,
];

/// The rounding constant whose low bits carry `n + 127 + shift` (see [`exp_split`]).
pub(crate) fn magic_for(shift: i32) -> f32 {
    MAGIC + (127 + shift) as f32
}

/// `max(x, lo)` that keeps a NaN `x` (lowers to one `maxps lo, x`).
fn max_keep_nan(v: &mut Vx, x: Value, lo: f32) -> Value {
    let lov = v.c(lo);
    let below = v.cmp(FloatCC::LessThan, x, lov);
    v.sel(below, lov, x)
}

/// `min(x, hi)` that keeps a NaN `x` (lowers to one `minps hi, x`).
fn min_keep_nan(v: &mut Vx, x: Value, hi: f32) -> Value {
    let hiv = v.c(hi);
    let above = v.cmp(FloatCC::LessThan, hiv, x);
    v.sel(above, hiv, x)
}

/// `x` limited to `[lo, hi]`; NaN passes through unchanged.
pub(crate) fn clamp(v: &mut Vx, x: Value, lo: f32, hi: f32) -> Value {
    let x = max_keep_nan(v, x, lo);
    min_keep_nan(v, x, hi)
}

/// Splits `e^w` (or `e^-w` when `negate`) into `(p, s)` with the result equal to
/// `p * s * 2^-shift`: `n = round(±w log2 e)` by the rounding constant `magic` (from
/// [`magic_for`]`(shift)`), a Cody-Waite reduction, `p = e^r` for |r| <= ln2/2 by
/// [`exp_poly`], and `s = 2^(n + shift)` made by shifting the rounding constant's low bits
/// into the exponent field ([`exp_scale`]). The caller keeps |w| < 2^21 and
/// `n + shift + 127` in `[1, 254]`. A NaN `w` makes `p` NaN.
fn exp_split(v: &mut Vx, w: Value, magic: Value, negate: bool) -> (Value, Value) {
    let sign = if negate { -1.0 } else { 1.0 };
    let l2e = v.c(sign * LOG2E);
    let t = v.mla(w, l2e, magic);
    let n = v.sub(t, magic);
    // r' = ±(w ∓ n ln2): for `negate` it is w + n ln2 = -r (see exp_poly).
    let c1 = v.c(-sign * LN2_HI);
    let c2 = v.c(-sign * LN2_LO);
    let r = v.mla(n, c1, w);
    let r = v.mla(n, c2, r);
    (exp_poly(v, r, negate), exp_scale(v, t))
}

/// `e^r` for |r| <= ln2/2 (plus a little) by one FMA Horner chain; with `negate`, `e^-r`
/// (the odd coefficients change sign: e^-r = 1 + (-r) Q(-r)).
fn exp_poly(v: &mut Vx, r: Value, negate: bool) -> Value {
    let coeffs: Vec<f32> = EXP_Q
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            // Degree of coefficient i is 5 - i.
            let odd = (EXP_Q.len() - 1 - i) % 2 == 1;
            match (negate, odd) {
                (false, _) => c,
                (true, true) => c,
                (true, false) => -c,
            }
        })
        .collect();
    let q = v.poly(r, &coeffs);
    let one = v.c(1.0);
    v.mla(q, r, one)
}

/// `2^(n + shift)` from `t = magic_for(shift) + n`: the low bits of the rounding constant
/// shifted into the exponent field (`n + shift + 127 = 255` gives +inf).
pub(crate) fn exp_scale(v: &mut Vx, t: Value) -> Value {
    let tb = v.bits(t);
    let e = v.b.ins().ishl_imm_s(tb, 23);
    v.float(e)
}

/// e^x: overflows to inf above 88.72, flushes to 0 below -103.97, keeps subnormal
/// results (one final rounding); NaN stays NaN.
pub(crate) fn exp(v: &mut Vx, x: Value) -> Value {
    let x = clamp(v, x, -104.0, 89.0);
    // n in [0, 128] for x > 0, [-150, 0] otherwise: two exponent windows, selected per
    // lane, each with its final power-of-two factor.
    let zero = v.c(0.0);
    let pos = v.cmp(FloatCC::GreaterThan, x, zero);
    let m_pos = v.c(magic_for(-1));
    let m_neg = v.c(magic_for(63));
    let magic = v.sel(pos, m_pos, m_neg);
    let (p, s) = exp_split(v, x, magic, false);
    let f_pos = v.c(2.0);
    let f_neg = v.c(f32::powi(2.0, -63));
    let f = v.sel(pos, f_pos, f_neg);
    let ps = v.mul(p, s);
    v.mul(ps, f)
}
/// ln(x) (Cephes logf) with subnormals scaled up; log(0) = -inf, log(x<0) = NaN.
pub(crate) fn log(v: &mut Vx, x: Value) -> Value {
    let small = v.cmp_c(FloatCC::LessThan, x, f32::MIN_POSITIVE);
    let big = v.c(8_388_608.0);
    let xs_big = v.mul(x, big);
    let xs = v.sel(small, xs_big, x);
    let bits = v.bits(xs);
    let e = v.b.ins().ushr_imm_s(bits, 23);
    let bias = v.ci(126);
    let e = v.b.ins().isub(e, bias);
    let e = v.b.ins().fcvt_from_sint(F32X4, e);
    let adj = v.c(-23.0);
    let zero = v.c(0.0);
    let eadj = v.sel(small, adj, zero);
    let e = v.add(e, eadj);
    let mant_mask = v.ci(0x007f_ffff);
    let half_bits = v.ci(0x3f00_0000);
    let m = v.b.ins().band(bits, mant_mask);
    let m = v.b.ins().bor(m, half_bits);
    let m = v.float(m);
    let lt = v.cmp_c(FloatCC::LessThan, m, std::f32::consts::FRAC_1_SQRT_2);
    let one = v.c(1.0);
    let e_dec = v.sel(lt, one, zero);
    let e = v.sub(e, e_dec);
    let m_add = v.sel(lt, m, zero);
    let m = v.add(m, m_add);
    let m = v.sub(m, one);
    let z = v.mul(m, m);
    let p = v.poly(
        m,
        &[
            7.037_683_629_2e-2,
            -1.151_461_031_0e-1,
            1.167_699_874_0e-1,
            -1.242_014_084_6e-1,
            1.424_932_278_7e-1,
            -1.666_805_766_5e-1,
            2.000_071_476_5e-1,
            -2.499_999_399_3e-1,
            3.333_333_117_4e-1,
        ],
    );
    let pm = v.mul(p, m);
    let y = v.mul(pm, z);
    let c_lo = v.c(LN2_LO);
    let y = v.mla(e, c_lo, y);
    let mhalf = v.c(-0.5);
    let y = v.mla(z, mhalf, y);
    let r = v.add(m, y);
    let c_hi = v.c(LN2_HI);
    let r = v.mla(e, c_hi, r);
    log_specials(v, x, r)
}

/// ln(1 + x) accurate for small x: with u = 1 + x rounded, `log(u) * x / (u - 1)`
/// cancels the rounding error of u (Goldberg); x where u == 1 (x tiny, keeps -0.0)
/// and where x is +inf.
pub(crate) fn log1p(v: &mut Vx, x: Value) -> Value {
    let one = v.c(1.0);
    let u = v.add(x, one);
    let d = v.sub(u, one);
    let l = log(v, u);
    let q = v.div(x, d);
    let r = v.mul(l, q);
    let exact = v.cmp_c(FloatCC::Equal, d, 0.0);
    let r = v.sel(exact, x, r);
    let inf = v.cmp_c(FloatCC::Equal, x, f32::INFINITY);
    v.sel(inf, x, r)
}

fn log_specials(v: &mut Vx, x: Value, r: Value) -> Value {
    let inf = v.c(f32::INFINITY);
    let is_inf = v.cmp(FloatCC::Equal, x, inf);
    let r = v.sel(is_inf, inf, r);
    let ninf = v.c(f32::NEG_INFINITY);
    let is_zero = v.cmp_c(FloatCC::Equal, x, 0.0);
    let r = v.sel(is_zero, ninf, r);
    let nan = v.c(f32::NAN);
    let neg = v.cmp_c(FloatCC::LessThan, x, 0.0);
    let r = v.sel(neg, nan, r);
    let is_nan = v.cmp(FloatCC::Unordered, x, x);
    v.sel(is_nan, x, r)
}

/// tanh(x): odd polynomial below 0.625, `1 - 2/(e^{2|x|}+1)` above (Cephes tanhf).
pub(crate) fn tanh(v: &mut Vx, x: Value) -> Value {
    let ax = v.b.ins().fabs(x);
    let z = v.mul(x, x);
    let p = v.poly(
        z,
        &[
            -5.704_988_727_45e-3,
            2.063_908_879_54e-2,
            -5.373_971_555_31e-2,
            1.333_144_220_36e-1,
            -3.333_328_194_22e-1,
        ],
    );
    let pz = v.mul(p, z);
    let small = v.mla(pz, ax, ax);
    // tanh(x) rounds to ±1 from |x| = 9.01; clamping there keeps 2^n in range.
    let axc = min_keep_nan(v, ax, 9.5);
    let ax2 = v.add(axc, axc);
    let magic = v.c(magic_for(0));
    let (p, s) = exp_split(v, ax2, magic, false);
    let one = v.c(1.0);
    let e1 = v.mla(p, s, one);
    let two = v.c(2.0);
    let q = v.div(two, e1);
    let large = v.sub(one, q);
    let is_small = v.cmp_c(FloatCC::LessThan, ax, 0.625);
    let r = v.sel(is_small, small, large);
    v.copysign(r, x)
}

/// 2^-64: the scale of sigmoid's numerator and denominator.
const SIGMOID_SCALE: f32 = 5.421_010_862_427_522e-20;

/// 1 / (1 + e^-x) computed as `C / (C + e^-x C)` with `C = 2^-64`: the scaled
/// denominator stays a normal float for every clamped x, and the one division rounds
/// subnormal results once. NaN stays NaN.
pub(crate) fn sigmoid(v: &mut Vx, x: Value) -> Value {
    // sigmoid(x) is 1 in f32 from x = 17; below -104 it rounds to 0. In the window
    // n = round(-x log2 e) is in [-58, 150], so n - 64 + 127 is a valid exponent.
    let x = clamp(v, x, -104.0, 40.0);
    let magic = v.c(magic_for(-64));
    let (p, s) = exp_split(v, x, magic, true);
    let scale = v.c(SIGMOID_SCALE);
    let d = v.mla(p, s, scale);
    v.div(scale, d)
}

const ERF_SPLIT: f32 = 0.921_875;
const ERF_ONE: f32 = 3.92;
const ERF_MID: f32 = 2.42;

/// erf(x): `x * P(x^2)` for |x| <= 0.921875, `1 - exp(Q(|x| - 2.42) - x^2)` above,
/// saturating at ±1 from 3.92 (coefficients fitted with Lawson's minimax iteration).
pub(crate) fn erf(v: &mut Vx, x: Value) -> Value {
    let ax = v.b.ins().fabs(x);
    let s = v.mul(x, x);
    let p = v.poly(
        s,
        &[
            8.370_099_385_501_817e-5,
            -8.142_704_027_704_895e-4,
            5.201_032_385_230_064e-3,
            -2.685_939_893_126_487_7e-2,
            1.128_369_569_778_442_4e-1,
            -3.761_263_489_723_205_6e-1,
            1.128_379_225_730_896,
        ],
    );
    let small = v.mul(x, p);
    let lim = v.c(ERF_ONE);
    let t = v.b.ins().fmin(ax, lim);
    let mid = v.c(ERF_MID);
    let u = v.sub(t, mid);
    let q = v.poly(
        u,
        &[
            1.632_531_166_251_283_1e-6,
            -1.432_364_933_862_118e-5,
            8.505_936_420_988_292e-5,
            -4.591_954_057_104_885_6e-4,
            2.340_991_050_004_959e-3,
            -1.157_900_411_635_637_3e-2,
            5.879_770_591_855_049e-2,
            -3.618_707_060_813_904e-1,
            -1.528_236_031_532_287_6,
        ],
    );
    let tt = v.mul(t, t);
    let q = v.sub(q, tt);
    let magic = v.c(magic_for(0));
    let (p, s2) = exp_split(v, q, magic, false);
    let e = v.mul(p, s2);
    let one = v.c(1.0);
    let large = v.sub(one, e);
    let large = v.copysign(large, x);
    let is_small = v.cmp_c(FloatCC::LessThanOrEqual, ax, ERF_SPLIT);
    v.sel(is_small, small, large)
}

/// max(x, 0) keeping NaN (via compare + select, since `fmax` semantics differ).
pub(crate) fn relu(v: &mut Vx, x: Value) -> Value {
    let zero = v.c(0.0);
    let neg = v.cmp(FloatCC::LessThan, x, zero);
    v.sel(neg, zero, x)
}

/// -1, 0 or 1 by sign; NaN stays NaN.
pub(crate) fn sign(v: &mut Vx, x: Value) -> Value {
    let zero = v.c(0.0);
    let gt = v.cmp(FloatCC::GreaterThan, x, zero);
    let lt = v.cmp(FloatCC::LessThan, x, zero);
    let p = v.mask_to_f32(gt);
    let n = v.mask_to_f32(lt);
    let r = v.sub(p, n);
    let is_nan = v.cmp(FloatCC::Unordered, x, x);
    v.sel(is_nan, x, r)
}
