//! The sort permutation of rows (`sort argsort topk`) on packed integer keys: each
//! element becomes one unsigned integer, its order-preserving key (PyTorch's order: NaN
//! above every number, -0.0 equal to 0.0; complemented for a descending sort) in the high
//! bits and its position in the low bits, so a plain unstable integer sort gives the
//! stable order (ties by position) with no comparator. 32-bit keys (float32, int32,
//! uint8, bool) pack into a u64, 64-bit keys into a u128. `topk` with a small `k` is one
//! scan with a bounded sorted buffer; rows, and a long single row, run in parallel.

use super::dtype::Elem;
use rayon::prelude::*;

/// A dtype's order-preserving key.
pub trait SortKey: Elem {
    /// The key fits in 32 bits.
    const NARROW: bool;
    /// Unsigned key whose integer order is PyTorch's sort order of the values.
    fn key(self) -> u64;
}

impl SortKey for f32 {
    const NARROW: bool = true;
    fn key(self) -> u64 {
        // one NaN (positive, above +inf), and -0.0 as 0.0
        let v = if self.is_nan() {
            f32::NAN
        } else if self == 0.0 {
            0.0
        } else {
            self
        };
        let b = v.to_bits();
        u64::from(if b >> 31 == 1 { !b } else { b | 0x8000_0000 })
    }
}

impl SortKey for f64 {
    const NARROW: bool = false;
    fn key(self) -> u64 {
        let v = if self.is_nan() {
            f64::NAN
        } else if self == 0.0 {
            0.0
        } else {
            self
        };
        let b = v.to_bits();
        if b >> 63 == 1 {
            !b
        } else {
            b | (1 << 63)
        }
    }
}

impl SortKey for i64 {
    const NARROW: bool = false;
    fn key(self) -> u64 {
        (self as u64) ^ (1 << 63)
    }
}

impl SortKey for i32 {
    const NARROW: bool = true;
    fn key(self) -> u64 {
        u64::from((self as u32) ^ 0x8000_0000)
    }
}

impl SortKey for u8 {
    const NARROW: bool = true;
    fn key(self) -> u64 {
        u64::from(self)
    }
}

impl SortKey for bool {
    const NARROW: bool = true;
    fn key(self) -> u64 {
        u64::from(self)
    }
}

/// A packed (key, position) integer.
trait Packed: Ord + Copy + Send + Sync {
    fn pack(key: u64, pos: usize) -> Self;
    fn pos(self) -> usize;
}

impl Packed for u64 {
    fn pack(key: u64, pos: usize) -> u64 {
        (key << 32) | pos as u64
    }
    fn pos(self) -> usize {
        (self & 0xffff_ffff) as usize
    }
}

impl Packed for u128 {
    fn pack(key: u64, pos: usize) -> u128 {
        (u128::from(key) << 64) | pos as u128
    }
    fn pos(self) -> usize {
        self as u64 as usize
    }
}

/// Below this many elements everything runs on the calling thread.
const PAR_MIN: usize = 1 << 16;
/// Up to this `k` a `topk` row is one scan with a sorted buffer of `k`.
const SCAN_K: usize = 64;

/// For each row of `n` (> 0) values of `vals`, the position of its most frequent value
/// (the smallest among equally frequent ones, by PyTorch's order) at its last
/// occurrence: `mode`'s choice.
pub fn mode_positions<T: SortKey>(vals: &[T], n: usize) -> Vec<i64> {
    let mut keyed: Vec<(u64, usize)> = Vec::with_capacity(n);
    vals.chunks(n.max(1))
        .map(|row| {
            keyed.clear();
            keyed.extend(row.iter().enumerate().map(|(i, v)| (v.key(), i)));
            keyed.sort_unstable();
            let (mut best, mut best_len, mut i) = (0, 0, 0);
            while i < keyed.len() {
                let mut j = i;
                while j + 1 < keyed.len() && keyed[j + 1].0 == keyed[i].0 {
                    j += 1;
                }
                if j + 1 - i > best_len {
                    (best, best_len) = (j, j + 1 - i);
                }
                i = j + 1;
            }
            keyed.get(best).map_or(0, |k| k.1 as i64)
        })
        .collect()
}

/// For each row of `n` values of `vals` (row-major), the positions of its first `keep`
/// elements in sorted order (ascending, or descending when `descending`), ties by
/// position; rows concatenated.
pub fn first_positions<T: SortKey>(
    vals: &[T],
    n: usize,
    keep: usize,
    descending: bool,
) -> Vec<i64> {
    let flip = if !descending {
        0
    } else if T::NARROW {
        0xffff_ffff
    } else {
        u64::MAX
    };
    if T::NARROW && n <= u32::MAX as usize {
        rows::<T, u64>(vals, n, keep, flip)
    } else {
        rows::<T, u128>(vals, n, keep, flip)
    }
}

fn rows<T: SortKey, P: Packed>(vals: &[T], n: usize, keep: usize, flip: u64) -> Vec<i64> {
    let packed = |row: &[T]| -> Vec<P> {
        row.iter()
            .enumerate()
            .map(|(i, &v)| P::pack(v.key() ^ flip, i))
            .collect()
    };
    let one = |row: &[T], par: bool| -> Vec<i64> {
        let sorted: Vec<P> = if keep <= SCAN_K && keep < n {
            scan_smallest(
                row.iter()
                    .enumerate()
                    .map(|(i, &v)| P::pack(v.key() ^ flip, i)),
                keep,
            )
        } else {
            let mut p = packed(row);
            if keep < n {
                if keep > 0 {
                    p.select_nth_unstable(keep - 1);
                }
                p.truncate(keep);
            }
            if par {
                p.par_sort_unstable();
            } else {
                p.sort_unstable();
            }
            p
        };
        sorted.into_iter().map(|p| p.pos() as i64).collect()
    };
    if vals.is_empty() || n == 0 {
        return vec![];
    }
    let count = vals.len() / n;
    if vals.len() < PAR_MIN {
        return vals.chunks(n).flat_map(|r| one(r, false)).collect();
    }
    if count == 1 {
        return one(vals, true);
    }
    let parts: Vec<Vec<i64>> = vals.par_chunks(n).map(|r| one(r, false)).collect();
    parts.concat()
}

/// The `k` smallest of `items` (all distinct), sorted: one pass keeping a sorted buffer.
fn scan_smallest<P: Packed>(items: impl Iterator<Item = P>, k: usize) -> Vec<P> {
    let mut buf: Vec<P> = Vec::with_capacity(k + 1);
    if k == 0 {
        return buf;
    }
    for p in items {
        if buf.len() == k {
            if p >= buf[k - 1] {
                continue;
            }
            buf.pop();
        }
        let at = buf.partition_point(|&b| b < p);
        buf.insert(at, p);
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: a stable sort by PyTorch's comparator.
    fn reference(v: &[f64], descending: bool) -> Vec<i64> {
        let mut p: Vec<usize> = (0..v.len()).collect();
        p.sort_by(|&a, &b| {
            let c = crate::tensor::sorting::cmp_f64(v[a], v[b]);
            if descending {
                c.reverse()
            } else {
                c
            }
        });
        p.into_iter().map(|i| i as i64).collect()
    }

    #[test]
    fn packed_order_is_torch_stable_order() {
        let v = [
            1.0,
            f64::NAN,
            -0.0,
            0.0,
            -3.5,
            f64::INFINITY,
            1.0,
            f64::NEG_INFINITY,
            -f64::NAN,
            2.0,
        ];
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        for desc in [false, true] {
            let want = reference(&v, desc);
            assert_eq!(first_positions(&v, v.len(), v.len(), desc), want);
            assert_eq!(first_positions(&v32, v.len(), v.len(), desc), want);
            for k in 0..v.len() {
                assert_eq!(first_positions(&v32, v.len(), k, desc), want[..k]);
                assert_eq!(first_positions(&v, v.len(), k, desc), want[..k]);
            }
        }
        let ints: Vec<i64> = vec![3, -1, 3, i64::MIN, i64::MAX, 0];
        let f: Vec<f64> = ints.iter().map(|&x| x as f64).collect();
        let i32s: Vec<i32> = vec![3, -1, 3, i32::MIN, i32::MAX, 0];
        assert_eq!(first_positions(&ints, 6, 6, true), reference(&f, true));
        assert_eq!(first_positions(&i32s, 6, 6, false), reference(&f, false));
    }

    #[test]
    fn large_rows_match_the_reference() {
        // parallel paths: one long row, many rows, topk by scan and by selection
        let n = 100_003usize;
        let v: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 % 1009) as f32 - 500.0) * 0.25)
            .collect();
        let f: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
        for desc in [false, true] {
            let want = reference(&f, desc);
            assert_eq!(first_positions(&v, n, n, desc), want);
            assert_eq!(first_positions(&v, n, 10, desc), want[..10]);
            assert_eq!(first_positions(&v, n, 500, desc), want[..500]);
        }
        let rows: Vec<i64> = first_positions(&v[..100_000], 1000, 3, true);
        for (r, got) in rows.chunks(3).enumerate() {
            let want = reference(&f[r * 1000..(r + 1) * 1000], true);
            assert_eq!(got, &want[..3]);
        }
    }
}
