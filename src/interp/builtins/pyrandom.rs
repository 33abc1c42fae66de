//! CPython 3.11's `random.Random`, bit for bit: MT19937 seeded with `init_by_array`,
//! `random()`, `getrandbits`, `_randbelow`, and the Python-level methods built on them.
//!
//! Mirrors `Modules/_randommodule.c` and `Lib/random.py`. Errors come back as
//! [`crate::Error`] with Python's kind and message and no span.

use crate::error::{Error, ErrorKind, Result};
use crate::tensor::mt19937::Mt19937;

const TWOPI: f64 = 2.0 * std::f64::consts::PI;

/// A Mersenne Twister generator with CPython's seeding and derived methods.
#[derive(Debug, Clone)]
pub struct PyRandom {
    mt: Mt19937,
    gauss_next: Option<f64>,
}

impl PyRandom {
    /// A generator seeded like `random.Random(n)`.
    pub fn new(n: i64) -> PyRandom {
        let mut r = PyRandom {
            mt: Mt19937::init_genrand(0),
            gauss_next: None,
        };
        r.seed(n);
        r
    }

    /// A generator seeded from the clock and the OS, like `random.Random()`.
    pub fn from_entropy() -> PyRandom {
        let mut r = PyRandom::new(0);
        r.seed_from_entropy();
        r
    }

    /// `random.seed(n)` for an int: all bits of `abs(n)` as little-endian 32-bit words.
    pub fn seed(&mut self, n: i64) {
        let mag = n.unsigned_abs();
        let (lo, hi) = (mag as u32, (mag >> 32) as u32);
        if hi == 0 {
            self.init_by_array(&[lo]);
        } else {
            self.init_by_array(&[lo, hi]);
        }
        self.gauss_next = None;
    }

    /// `random.seed()` with no argument. CPython reads `os.urandom`; this mixes the
    /// clock, the process id and the OS-seeded hasher keys of `RandomState`.
    pub fn seed_from_entropy(&mut self) {
        use std::hash::BuildHasher;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let hashed = std::collections::hash_map::RandomState::new().hash_one(nanos);
        let key = [
            nanos as u32,
            (nanos >> 32) as u32,
            (nanos >> 64) as u32,
            std::process::id(),
            hashed as u32,
            (hashed >> 32) as u32,
        ];
        self.init_by_array(&key);
        self.gauss_next = None;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.mt = Mt19937::init_by_array(key);
    }

    /// The next tempered 32-bit output (`genrand_uint32`).
    fn next_u32(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// `random.random()`: a float in `[0, 1)` with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (f64::from(a) * 67_108_864.0 + f64::from(b)) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `random.getrandbits(k)` for `0 <= k <= 64`. Err: `ValueError` for larger `k`
    /// (a Kiln int has 64 bits; CPython would return a bigger int).
    pub fn getrandbits(&mut self, k: u32) -> Result<u64> {
        if k > 64 {
            return Err(Error::new(
                ErrorKind::ValueError,
                "getrandbits() is limited to 64 bits",
                None,
            ));
        }
        Ok(self.bits(k) as u64)
    }

    /// `k <= 128` random bits, filled 32 at a time from the least significant word,
    /// the last word keeping its top bits (CPython's `_random_Random_getrandbits_impl`).
    fn bits(&mut self, k: u32) -> u128 {
        let mut out: u128 = 0;
        let mut left = k;
        let mut shift = 0;
        while left > 0 {
            let mut r = self.next_u32();
            if left < 32 {
                r >>= 32 - left;
            }
            out |= u128::from(r) << shift;
            shift += 32;
            left = left.saturating_sub(32);
        }
        out
    }

    /// `Random._randbelow(n)` (`_randbelow_with_getrandbits`): uniform in `[0, n)`.
    /// `n` must be positive; 0 gives 0.
    fn randbelow(&mut self, n: u128) -> u128 {
        if n == 0 {
            return 0;
        }
        let k = 128 - n.leading_zeros();
        loop {
            let r = self.bits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `random.randrange(start, stop, step)` with Python's errors.
    pub fn randrange(&mut self, start: i64, stop: i64, step: i64) -> Result<i64> {
        let width = i128::from(stop) - i128::from(start);
        let empty = || {
            Err(Error::new(
                ErrorKind::ValueError,
                "empty range for randrange()",
                None,
            ))
        };
        if step == 1 {
            if width > 0 {
                let r = self.randbelow(width as u128) as i128;
                return Ok((i128::from(start) + r) as i64);
            }
            return Err(Error::new(
                ErrorKind::ValueError,
                format!("empty range for randrange() ({start}, {stop}, {width})"),
                None,
            ));
        }
        let istep = i128::from(step);
        let n = match step {
            0 => {
                return Err(Error::new(
                    ErrorKind::ValueError,
                    "zero step for randrange()",
                    None,
                ))
            }
            s if s > 0 => floor_div_i128(width + istep - 1, istep),
            _ => floor_div_i128(width + istep + 1, istep),
        };
        if n <= 0 {
            return empty();
        }
        let r = self.randbelow(n as u128) as i128;
        Ok((i128::from(start) + istep * r) as i64)
    }

    /// `random.randrange(stop)`.
    pub fn randrange_below(&mut self, stop: i64) -> Result<i64> {
        if stop > 0 {
            Ok(self.randbelow(stop as u128) as i64)
        } else {
            Err(Error::new(
                ErrorKind::ValueError,
                "empty range for randrange()",
                None,
            ))
        }
    }

    /// `random.randint(a, b)`: uniform in `[a, b]`, i.e. `randrange(a, b + 1)`.
    pub fn randint(&mut self, a: i64, b: i64) -> Result<i64> {
        let width = i128::from(b) + 1 - i128::from(a);
        if width <= 0 {
            let stop = i128::from(b) + 1;
            return Err(Error::new(
                ErrorKind::ValueError,
                format!("empty range for randrange() ({a}, {stop}, {width})"),
                None,
            ));
        }
        let r = self.randbelow(width as u128) as i128;
        Ok((i128::from(a) + r) as i64)
    }

    /// `random.uniform(a, b)`: `a + (b - a) * random()`.
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }

    /// `random.gauss(mu, sigma)`: Box-Muller, caching the second value as CPython does.
    pub fn gauss(&mut self, mu: f64, sigma: f64) -> f64 {
        let z = match self.gauss_next.take() {
            Some(z) => z,
            None => {
                let x2pi = self.random() * TWOPI;
                let g2rad = (-2.0 * (1.0 - self.random()).ln()).sqrt();
                self.gauss_next = Some(x2pi.sin() * g2rad);
                x2pi.cos() * g2rad
            }
        };
        mu + z * sigma
    }

    /// `random.shuffle(items)`: in place, the same swaps as CPython 3.11.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.randbelow(i as u128 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// The permutation `shuffle` applies to a list of length `n`: after
    /// `random.shuffle(x)`, `x[k]` is the old `x[perm[k]]`.
    pub fn shuffle_permutation(&mut self, n: usize) -> Vec<usize> {
        let mut perm: Vec<usize> = (0..n).collect();
        self.shuffle(&mut perm);
        perm
    }

    /// The index `random.choice(seq)` picks for a sequence of length `len`.
    /// Err: `IndexError` for an empty sequence.
    pub fn choice_index(&mut self, len: usize) -> Result<usize> {
        if len == 0 {
            return Err(Error::new(
                ErrorKind::IndexError,
                "Cannot choose from an empty sequence",
                None,
            ));
        }
        Ok(self.randbelow(len as u128) as usize)
    }
}

fn floor_div_i128(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

#[cfg(test)]
#[path = "pyrandom_tests.rs"]
mod tests;
