//! The reproducible random generator behind `rand randn randint normal bernoulli
//! manual_seed`, the random fills (`uniform_ normal_ bernoulli_ random_`), dropout and
//! `randperm`: one stream per thread holding PyTorch's CPU generator (its [`Mt19937`]
//! engine seeded as `CPUGeneratorImpl`, plus the cached second normal of the scalar
//! Box-Muller path), and the draws of PyTorch 2.x's CPU kernels on it
//! (aten/src/ATen/native/cpu/DistributionTemplates.h, core/DistributionsHelper.h), so
//! `manual_seed(s)` then the same calls give torch's numbers bit for bit.

pub use super::mt19937::Mt19937;

use super::dtype::Elem;
use super::storage::collect_vec;
use super::torch_mathfun::{log_ps, sincos_ps};
use crate::error::Result;
use std::cell::RefCell;

const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// PyTorch's CPU generator: the engine and `next_double_normal_sample`.
#[derive(Debug, Clone)]
pub struct Rng {
    /// PyTorch's CPU generator engine, seeded with the same `manual_seed`.
    pub torch: Mt19937,
    next_normal: Option<f64>,
}

/// A float dtype the random fills write: float32 draws 24 random bits per uniform
/// (`random()`), float64 53 (`random64()`).
pub trait RandFloat: Elem + Copy + PartialEq {
    fn uniform(rng: &mut Rng) -> Self;
    fn from_f64(v: f64) -> Self;
    /// `x * (to - from) + from`, contracted to one rounding as torch's build does.
    fn mul_add(self, a: Self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    /// `NormalFill16`: Box-Muller over 16 uniforms, pairing i with i + 8.
    fn normal_fill_16(d: &mut [Self], mean: Self, std: Self);
}

impl RandFloat for f32 {
    fn uniform(rng: &mut Rng) -> f32 {
        (rng.torch.next_u32() & 0x00ff_ffff) as f32 * (1.0 / (1u32 << 24) as f32)
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn mul_add(self, a: f32, b: f32) -> f32 {
        f32::mul_add(self, a, b)
    }
    fn sub(self, b: f32) -> f32 {
        self - b
    }
    /// The AVX2 `NormalFill16<float>` torch dispatches to on x86 (its AVX512 build has
    /// no kernel of its own): avx_mathfun's log and sincos, then `fmadd`.
    fn normal_fill_16(d: &mut [f32], mean: f32, std: f32) {
        let two_pi = (2.0 * std::f64::consts::PI) as f32;
        for j in 0..8 {
            let radius = (-2.0 * log_ps(1.0 - d[j])).sqrt();
            let (s, c) = sincos_ps(two_pi * d[j + 8]);
            d[j] = (radius * c).mul_add(std, mean);
            d[j + 8] = (radius * s).mul_add(std, mean);
        }
    }
}

impl RandFloat for f64 {
    fn uniform(rng: &mut Rng) -> f64 {
        (rng.torch.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn mul_add(self, a: f64, b: f64) -> f64 {
        f64::mul_add(self, a, b)
    }
    fn sub(self, b: f64) -> f64 {
        self - b
    }
    fn normal_fill_16(d: &mut [f64], mean: f64, std: f64) {
        for j in 0..8 {
            let radius = (-2.0 * (1.0 - d[j]).ln()).sqrt();
            let theta = 2.0 * std::f64::consts::PI * d[j + 8];
            d[j] = (radius * theta.cos()).mul_add(std, mean);
            d[j + 8] = (radius * theta.sin()).mul_add(std, mean);
        }
    }
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            torch: Mt19937::torch_seeded(seed),
            next_normal: None,
        }
    }

    /// A `torch.Generator`'s state: its engine and cached second normal draw.
    pub fn from_parts(torch: Mt19937, next_normal: Option<f64>) -> Rng {
        Rng { torch, next_normal }
    }

    /// The cached second value of the scalar Box-Muller path.
    pub fn next_normal(&self) -> Option<f64> {
        self.next_normal
    }

    /// A float64 uniform in [0, 1) (53 bits).
    pub fn uniform(&mut self) -> f64 {
        f64::uniform(self)
    }

    /// `normal_distribution<double>`: Box-Muller on two float64 uniforms, the sine half
    /// kept for the next call.
    pub fn normal(&mut self) -> f64 {
        if let Some(v) = self.next_normal.take() {
            return v;
        }
        let u1 = self.uniform();
        let u2 = self.uniform();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_normal = Some(r * theta.sin());
        r * theta.cos()
    }

    /// `uniform_int_from_to_distribution`: `random() % range + low`, from `random64()`
    /// when the range needs more than 32 bits. The caller checks low < high.
    pub fn int_range(&mut self, low: i64, high: i64) -> i64 {
        let range = high.wrapping_sub(low) as u64;
        let v = if range >= 1 << 32 {
            self.torch.random64()
        } else {
            u64::from(self.torch.next_u32())
        };
        (v % range).wrapping_add(low as u64) as i64
    }
}

/// `uniform_(from, to)` over `n` elements: `uniform_kernel` (a draw that rounds up to
/// `to` becomes `from`).
pub fn uniform_vec<T: RandFloat>(n: usize, from: f64, to: f64) -> Result<Vec<T>> {
    let (lo, hi) = (T::from_f64(from), T::from_f64(to));
    let span = hi.sub(lo);
    with_rng(|r| {
        collect_vec(
            n,
            (0..n).map(|_| {
                let v = T::uniform(r).mul_add(span, lo);
                if v == hi {
                    lo
                } else {
                    v
                }
            }),
        )
    })
}

/// `normal_(mean, std)` over `n` contiguous elements: `normal_fill` (16-blocks, the
/// last block redrawn over the tail) from 16 elements on, else the scalar path.
pub fn normal_vec<T: RandFloat>(n: usize, mean: f64, std: f64) -> Result<Vec<T>> {
    with_rng(|r| {
        if n < 16 {
            return collect_vec(
                n,
                (0..n).map(|_| T::from_f64(r.normal().mul_add(std, mean))),
            );
        }
        let (m, s) = (T::from_f64(mean), T::from_f64(std));
        let mut d = collect_vec(n, (0..n).map(|_| T::uniform(r)))?;
        for block in d.chunks_exact_mut(16) {
            T::normal_fill_16(block, m, s);
        }
        if !n.is_multiple_of(16) {
            let tail = &mut d[n - 16..];
            for x in tail.iter_mut() {
                *x = T::uniform(r);
            }
            T::normal_fill_16(tail, m, s);
        }
        Ok(d)
    })
}

/// `bernoulli_(p)` with a number p: a float64 uniform below p.
pub fn bernoulli_vec(n: usize, p: f64) -> Result<Vec<bool>> {
    with_rng(|r| collect_vec(n, (0..n).map(|_| r.uniform() < p)))
}

/// `bernoulli(probs)`: a uniform of the probabilities' dtype below each.
pub fn bernoulli_each<T: RandFloat + PartialOrd>(probs: &[T]) -> Result<Vec<bool>> {
    with_rng(|r| collect_vec(probs.len(), probs.iter().map(|&p| T::uniform(r) < p)))
}

thread_local! {
    static RNG: RefCell<Rng> = RefCell::new(Rng::new(DEFAULT_SEED));
}

/// `manual_seed(n)`: restart this thread's stream.
pub fn manual_seed(seed: u64) {
    RNG.with(|r| *r.borrow_mut() = Rng::new(seed));
}

/// A copy of this thread's generator state (a speculative run restores it after).
pub fn save_rng() -> Rng {
    RNG.with(|r| r.borrow().clone())
}

/// Puts back a state from `save_rng`.
pub fn restore_rng(state: Rng) {
    RNG.with(|r| *r.borrow_mut() = state);
}

/// Run `f` with this thread's generator.
pub fn with_rng<R>(f: impl FnOnce(&mut Rng) -> R) -> R {
    crate::ir::record::graph_break(crate::ir::record::BreakReason::Random("random numbers"));
    RNG.with(|r| f(&mut r.borrow_mut()))
}
