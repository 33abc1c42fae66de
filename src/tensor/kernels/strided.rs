//! Strided iteration: visiting the storage offsets of a (shape, strides, offset) view in
//! row-major order, for one or two operands at once.

/// Call `f` with the storage offset of every element, in row-major order.
pub fn for_each_offset(
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    mut f: impl FnMut(usize),
) {
    let nd = shape.len();
    if nd == 0 {
        f(offset);
        return;
    }
    if shape.contains(&0) {
        return;
    }
    let inner = shape[nd - 1];
    let inner_st = strides[nd - 1];
    let mut idx = [0usize; 64];
    let mut idx_heap;
    let idx: &mut [usize] = if nd <= 64 {
        &mut idx[..nd]
    } else {
        idx_heap = vec![0usize; nd];
        &mut idx_heap
    };
    let mut base = offset;
    loop {
        let mut o = base;
        for _ in 0..inner {
            f(o);
            o += inner_st;
        }
        // advance the outer odometer
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            base -= strides[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Like `for_each_offset` for two operands sharing one iteration shape.
pub fn for_each_offset2(
    shape: &[usize],
    s1: &[usize],
    o1: usize,
    s2: &[usize],
    o2: usize,
    mut f: impl FnMut(usize, usize),
) {
    let nd = shape.len();
    if nd == 0 {
        f(o1, o2);
        return;
    }
    if shape.contains(&0) {
        return;
    }
    let inner = shape[nd - 1];
    let (i1, i2) = (s1[nd - 1], s2[nd - 1]);
    let mut idx = vec![0usize; nd];
    let (mut b1, mut b2) = (o1, o2);
    loop {
        let (mut a, mut b) = (b1, b2);
        for _ in 0..inner {
            f(a, b);
            a += i1;
            b += i2;
        }
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            b1 += s1[d];
            b2 += s2[d];
            if idx[d] < shape[d] {
                break;
            }
            b1 -= s1[d] * shape[d];
            b2 -= s2[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// True when every element of the (shape, strides, offset) view lies inside a storage
/// of `len` elements (strides and shape of the same rank).
pub fn view_fits(shape: &[usize], strides: &[usize], offset: usize, len: usize) -> bool {
    if shape.len() != strides.len() {
        return false;
    }
    if shape.contains(&0) {
        return true;
    }
    let last = shape.iter().zip(strides).try_fold(offset, |acc, (&n, &s)| {
        (n - 1).checked_mul(s).and_then(|x| acc.checked_add(x))
    });
    last.is_some_and(|l| l < len)
}

/// Gather the elements of a strided view into a new row-major Vec. False (nothing
/// written) when the view does not fit in `src` (a malformed tensor: a bug elsewhere).
#[must_use]
pub fn gather_strided<T: Copy>(
    src: &[T],
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    out: &mut Vec<T>,
) -> bool {
    if !view_fits(shape, strides, offset, src.len()) {
        return false;
    }
    if let ([rows, cols], [1, cs]) = (shape, strides) {
        if *cs != 1 && gather_transposed(src, (*rows, *cols), *cs, offset, out) {
            return true;
        }
    }
    match (shape.split_last(), strides.split_last()) {
        // contiguous rows (a permuted or sliced view): one copy per row
        (Some((&inner, outer)), Some((1, st))) if inner >= 8 => {
            for_each_offset(outer, st, offset, |o| {
                out.extend_from_slice(src.get(o..o + inner).unwrap_or(&[]))
            });
        }
        // a broadcast innermost dim: one value per row, repeated
        (Some((&inner, outer)), Some((0, st))) => {
            for_each_offset(outer, st, offset, |o| {
                out.extend(std::iter::repeat_n(src[o], inner))
            });
        }
        _ => for_each_offset(shape, strides, offset, |o| out.push(src[o])),
    }
    true
}

/// Elements gathered between two polls of the engine's interrupt flag and deadline.
const POLL_CHUNK: usize = 1 << 22;

/// [`gather_strided`] of a large view in chunks of [`POLL_CHUNK`] elements, polling the
/// running engine's interrupt and deadline between chunks (a copy of a huge expanded
/// view must stop under a wall-time limit). `Ok(false)` (nothing gathered) for a view
/// that does not fit its storage, as [`gather_strided`].
pub fn gather_strided_polled<T: Copy>(
    src: &[T],
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    out: &mut Vec<T>,
) -> crate::error::Result<bool> {
    if !view_fits(shape, strides, offset, src.len()) {
        return Ok(false);
    }
    let n: usize = shape.iter().product();
    // a transposed matrix keeps its blocked copy (memory-bound: fast at any size)
    let transposed = matches!((shape, strides), ([_, _], [1, cs]) if *cs != 1);
    if n <= POLL_CHUNK || transposed {
        return Ok(gather_strided(src, shape, strides, offset, out));
    }
    let mut start = 0;
    while start < n {
        crate::tensor::cancel::poll_kernel()?;
        let len = POLL_CHUNK.min(n - start);
        gather_range(src, shape, strides, offset, start, len, out);
        start += len;
    }
    Ok(true)
}

/// Appends the elements `start..start + len` (row-major) of a strided view to `out`,
/// a run along the innermost dimension at a time.
fn gather_range<T: Copy>(
    src: &[T],
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    start: usize,
    len: usize,
    out: &mut Vec<T>,
) {
    let nd = shape.len();
    let mut idx = vec![0usize; nd];
    let (mut rem, mut o) = (start, offset);
    for d in (0..nd).rev() {
        idx[d] = rem % shape[d];
        rem /= shape[d];
        o += idx[d] * strides[d];
    }
    let (inner, step) = (shape[nd - 1], strides[nd - 1]);
    let mut left = len;
    while left > 0 {
        let run = (inner - idx[nd - 1]).min(left);
        if step == 1 {
            out.extend_from_slice(src.get(o..o + run).unwrap_or(&[]));
            o += run;
        } else if step == 0 {
            // a broadcast dim (an expanded gradient): one value, repeated
            out.extend(std::iter::repeat_n(src[o], run));
        } else {
            for _ in 0..run {
                out.push(src[o]);
                o += step;
            }
        }
        left -= run;
        idx[nd - 1] += run;
        if idx[nd - 1] < inner {
            continue;
        }
        o -= step * inner;
        idx[nd - 1] = 0;
        for d in (0..nd - 1).rev() {
            idx[d] += 1;
            o += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            o -= strides[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Tile edge of the blocked transpose (a 32x32 f32 tile is 4 KiB: both the rows read
/// and the rows written stay in L1).
const TILE: usize = 32;

/// A 2-D view whose rows are contiguous in memory and whose columns are `cs` apart (a
/// transposed matrix: element (r, c) at `offset + r + c * cs`), copied row-major tile by
/// tile so neither side walks memory with a large stride. False (nothing written) when
/// the view does not fit in `src` or is too small to bother.
fn gather_transposed<T: Copy>(
    src: &[T],
    (rows, cols): (usize, usize),
    cs: usize,
    offset: usize,
    out: &mut Vec<T>,
) -> bool {
    let n = rows.saturating_mul(cols);
    let last = (rows.saturating_sub(1))
        .saturating_add(cols.saturating_sub(1).saturating_mul(cs))
        .saturating_add(offset);
    if n < TILE * TILE || last >= src.len() {
        return false;
    }
    let start = out.len();
    out.resize(start + n, src[offset]);
    let dst = &mut out[start..];
    for r0 in (0..rows).step_by(TILE) {
        let r1 = rows.min(r0 + TILE);
        for c0 in (0..cols).step_by(TILE) {
            for c in c0..cols.min(c0 + TILE) {
                let col = &src[offset + c * cs + r0..offset + c * cs + r1];
                for (r, &v) in (r0..r1).zip(col) {
                    dst[r * cols + c] = v;
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{gather_range, gather_strided};

    /// Chunked gathers (chunk edges inside rows, across rows and planes, broadcast
    /// strides) give exactly the elements of the one-pass walk.
    #[test]
    fn chunked_gather_matches_the_one_pass_walk() {
        let src: Vec<i64> = (0..1000).collect();
        for (shape, strides, offset) in [
            (vec![3, 4, 5], vec![100, 1, 7], 3),
            (vec![2, 7, 1, 3], vec![0, 11, 5, 2], 1),
            (vec![5, 6], vec![0, 0], 9),
            (vec![9], vec![3], 0),
        ] {
            let mut want = Vec::new();
            assert!(gather_strided(&src, &shape, &strides, offset, &mut want));
            for chunk in [1, 2, 3, 4, 5, 7, 13, 64] {
                let mut got = Vec::new();
                let mut start = 0;
                while start < want.len() {
                    let len = chunk.min(want.len() - start);
                    gather_range(&src, &shape, &strides, offset, start, len, &mut got);
                    start += len;
                }
                assert_eq!(got, want, "{shape:?} {strides:?} chunk {chunk}");
            }
        }
    }

    /// The blocked transpose agrees with the plain odometer walk, on sizes around the
    /// tile edge, with an offset, and on a view that is not a plain transpose.
    #[test]
    fn transposed_gather_matches_the_odometer() {
        for (rows, cols) in [
            (32, 32),
            (33, 70),
            (100, 31),
            (257, 64),
            (1, 2000),
            (2000, 1),
        ] {
            let cs = rows + 3;
            let offset = 5;
            let src: Vec<f32> = (0..offset + cols * cs).map(|i| i as f32).collect();
            let mut fast = Vec::new();
            assert!(gather_strided(
                &src,
                &[rows, cols],
                &[1, cs],
                offset,
                &mut fast
            ));
            let mut want = Vec::new();
            for r in 0..rows {
                for c in 0..cols {
                    want.push(src[offset + r + c * cs]);
                }
            }
            assert_eq!(fast, want, "{rows}x{cols}");
        }
    }

    /// A view reaching past its storage (or an empty storage) gathers nothing and says
    /// so instead of indexing out of bounds.
    #[test]
    fn malformed_views_are_refused() {
        let src = [1.0f32, 2.0, 3.0, 4.0];
        let mut out = Vec::new();
        assert!(!gather_strided(&src[..0], &[9, 2], &[1, 9], 0, &mut out));
        assert!(!gather_strided(&src, &[2, 2], &[1, 2], 1, &mut out));
        assert!(!gather_strided(&src, &[2, 2], &[1], 0, &mut out));
        assert!(!gather_strided(
            &src,
            &[2, 2],
            &[usize::MAX, 1],
            0,
            &mut out
        ));
        assert!(out.is_empty());
        assert!(gather_strided(&src, &[2, 2], &[1, 2], 0, &mut out));
        assert_eq!(out, [1.0, 3.0, 2.0, 4.0]);
        assert!(gather_strided(&src[..0], &[0, 2], &[2, 1], 0, &mut out));
    }
}
