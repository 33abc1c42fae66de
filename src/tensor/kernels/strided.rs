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

/// Gather the elements of a strided view into a new row-major Vec.
pub fn gather_strided<T: Copy>(
    src: &[T],
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    out: &mut Vec<T>,
) {
    for_each_offset(shape, strides, offset, |o| out.push(src[o]));
}
