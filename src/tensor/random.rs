//! The reproducible random generator behind `rand randn randint manual_seed` (and the
//! interpreter's `dropout`/`shuffle`): xoshiro256** seeded through splitmix64, one
//! stream per thread; `rand`/`randn` do not reproduce PyTorch's numbers. Beside it each
//! stream holds PyTorch's CPU engine ([`Mt19937`] seeded as `CPUGeneratorImpl`), which
//! `randperm` and the seeds of data shuffling draw from, so those give torch's order.

pub use super::mt19937::Mt19937;

use std::cell::RefCell;

const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// xoshiro256** state, plus PyTorch's engine for the permutation stream.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
    /// PyTorch's CPU generator engine, seeded with the same `manual_seed`.
    pub torch: Mt19937,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
            torch: Mt19937::torch_seeded(seed),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Uniform integer in [low, high); the caller checks low < high.
    pub fn int_range(&mut self, low: i64, high: i64) -> i64 {
        let span = high.wrapping_sub(low) as u64;
        if span == 0 {
            return low;
        }
        // rejection sampling for an unbiased draw
        let zone = u64::MAX - (u64::MAX % span);
        loop {
            let r = self.next_u64();
            if r < zone {
                return low.wrapping_add((r % span) as i64);
            }
        }
    }
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
