//! The 32-bit Mersenne Twister (MT19937) shared by CPython's `random` (seeded with
//! `init_by_array`) and PyTorch's CPU generator (seeded with `init_genrand` of the seed's
//! low 32 bits), plus PyTorch's draws on it: `random64` and `randperm`'s swaps.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// The generator's 624 words and the position of the next output.
#[derive(Debug, Clone)]
pub struct Mt19937 {
    mt: Box<[u32; N]>,
    index: usize,
}

impl Mt19937 {
    /// The reference `init_genrand(s)`.
    pub fn init_genrand(s: u32) -> Mt19937 {
        let mut mt = Box::new([0u32; N]);
        mt[0] = s;
        for i in 1..N {
            let prev = mt[i - 1];
            mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { mt, index: N }
    }

    /// PyTorch's `CPUGeneratorImpl::set_current_seed(seed)`: `init_genrand` of the
    /// seed's low 32 bits.
    pub fn torch_seeded(seed: u64) -> Mt19937 {
        Mt19937::init_genrand(seed as u32)
    }

    /// The reference `init_by_array(key)` (as in CPython's `_randommodule.c`).
    pub fn init_by_array(key: &[u32]) -> Mt19937 {
        let mut g = Mt19937::init_genrand(19_650_218);
        let mt = &mut g.mt;
        let klen = key.len().max(1);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1];
            mt[i] = (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key.get(j).copied().unwrap_or(0))
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= klen {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1];
            mt[i] =
                (mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        g
    }

    fn twist(&mut self) {
        for k in 0..N {
            let y = (self.mt[k] & UPPER_MASK) | (self.mt[(k + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// The next tempered 32-bit output (`genrand_uint32`; PyTorch's `random()`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// PyTorch's `random64()`: two outputs, the first as the high word.
    pub fn random64(&mut self) -> u64 {
        let hi = self.next_u32();
        let lo = self.next_u32();
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// `torch.empty((), dtype=torch.int64).random_(generator=g).item()`: `random64()`
    /// modulo 2^63 (how torch.utils.data draws its seeds).
    pub fn random_int64(&mut self) -> i64 {
        (self.random64() & (u64::MAX >> 1)) as i64
    }

    /// `randperm_cpu`'s swaps for a permutation of `0..n` over `v` (PyTorch uses them for
    /// every n below 2^32 / 20; Kiln for all n): for each i below n - 1,
    /// swap i with i + random() % (n - i).
    pub fn shuffle_like_randperm(&mut self, v: &mut [i64]) {
        let n = v.len();
        for i in 0..n.saturating_sub(1) {
            let z = (u64::from(self.next_u32()) % (n - i) as u64) as usize;
            v.swap(i, z + i);
        }
    }

    /// The state as 625 ints (the 624 words, then the position), for a generator object
    /// that lives in the language.
    pub fn to_words(&self) -> Vec<i64> {
        let mut out: Vec<i64> = self.mt.iter().map(|&w| i64::from(w)).collect();
        out.push(self.index as i64);
        out
    }

    /// The inverse of [`Mt19937::to_words`]; None for anything else.
    pub fn from_words(words: &[i64]) -> Option<Mt19937> {
        if words.len() != N + 1 {
            return None;
        }
        let mut mt = Box::new([0u32; N]);
        for (dst, &w) in mt.iter_mut().zip(words) {
            *dst = u32::try_from(w).ok()?;
        }
        let index = usize::try_from(words[N]).ok().filter(|&i| i <= N)?;
        Some(Mt19937 { mt, index })
    }
}
