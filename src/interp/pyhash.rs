//! Python hash values (`hash(v)`), which are also what a dict key feeds its map's hasher:
//! two keys a user `__eq__` may call equal (an instance whose `__hash__` returns
//! `hash(self.s)` and the str `s`) land in the same bucket. Ints, floats and tuples hash
//! as CPython 3.11 does (so `hash(-1) == -2`, `hash(0.5)`, `hash((1, 2))` print the same
//! numbers); a str's hash is deterministic but not CPython's (CPython randomises it).

use super::value::{FxBuild, Value, MAX_KEY_DEPTH};
use std::hash::BuildHasher;

/// CPython's modulus for numeric hashes: the Mersenne prime 2**61 - 1.
const MODULUS: u64 = (1 << 61) - 1;
const BITS: u32 = 61;
/// `hash(float('inf'))`.
const INF: i64 = 314159;

/// -1 is CPython's error mark: a hash of -1 becomes -2.
#[inline(always)]
fn fix(h: i64) -> i64 {
    if h == -1 {
        -2
    } else {
        h
    }
}

/// `hash(i)` for an int: `i` itself for all but huge ints and -1.
#[inline(always)]
pub fn int(i: i64) -> i64 {
    const M: i64 = MODULUS as i64;
    if i > -M && i < M {
        return fix(i);
    }
    let a = (i.unsigned_abs() % MODULUS) as i64;
    fix(if i < 0 { -a } else { a })
}

/// `hash(f)` for a float (CPython's `_Py_HashDouble`; an integral float hashes as the
/// equal int; a NaN hashes as 0, Kiln's floats having no identity).
pub fn float(f: f64) -> i64 {
    if f.fract() == 0.0 && f.abs() < 9.2e18 {
        return int(f as i64);
    }
    if f.is_infinite() {
        return if f > 0.0 { INF } else { -INF };
    }
    if f.is_nan() {
        return 0;
    }
    let (mut m, mut e) = frexp(f);
    let sign: i64 = if m < 0.0 {
        m = -m;
        -1
    } else {
        1
    };
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & MODULUS) | x >> (BITS - 28);
        m *= 268435456.0;
        e -= 28;
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= MODULUS {
            x -= MODULUS;
        }
    }
    let e = if e >= 0 {
        e as u32 % BITS
    } else {
        BITS - 1 - ((-1 - e) as u32 % BITS)
    };
    x = ((x << e) & MODULUS) | x >> (BITS - e);
    fix((x as i64).wrapping_mul(sign))
}

/// `f = m * 2**e` with `0.5 <= |m| < 1` (C's `frexp`) for a finite non-zero `f`.
fn frexp(f: f64) -> (f64, i32) {
    let (f, bias) = if f.abs() < f64::MIN_POSITIVE {
        (f * 2f64.powi(64), 64)
    } else {
        (f, 0)
    };
    let bits = f.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exp - 1022 - bias)
}

/// `hash(s)` for a str (deterministic; not CPython's randomised one).
#[inline]
pub fn str(s: &str) -> i64 {
    fix(FxBuild::default().hash_one(s) as i64 >> 1)
}

/// `hash(t)` for a tuple of hashable values (CPython's xxHash-based tuple hash).
fn tuple(t: &[Value], depth: usize) -> i64 {
    const P1: u64 = 11400714785074694791;
    const P2: u64 = 14029467366897019727;
    const P5: u64 = 2870177450012600261;
    let mut acc = P5;
    for x in t {
        let lane = value(x, depth + 1) as u64;
        acc = acc.wrapping_add(lane.wrapping_mul(P2));
        acc = acc.rotate_left(31);
        acc = acc.wrapping_mul(P1);
    }
    acc = acc.wrapping_add(t.len() as u64 ^ (P5 ^ 3527539));
    if acc == u64::MAX {
        return 1546275796;
    }
    acc as i64
}

/// The hash of a value a dict key may hold (`Key::new` checked it is hashable): an
/// instance's recorded user hash (or its identity), numbers, strs and tuples as above.
pub fn value(v: &Value, depth: usize) -> i64 {
    match v {
        Value::Int(i) => int(*i),
        Value::Str(s) => str(s),
        Value::Bool(b) => *b as i64,
        Value::Float(f) => float(*f),
        Value::None => 0x5f3759df,
        Value::Instance(i) => match i.hash.get() {
            Some(x) => x,
            None => v.ptr_id() as i64,
        },
        Value::Tuple(t) | Value::Size(t) if depth < MAX_KEY_DEPTH => tuple(t, depth),
        Value::DType(d) => str(d.name()),
        Value::FrozenSet(d) => frozenset(d),
        other => other.ptr_id() as i64,
    }
}

/// An order-independent hash of a frozenset's members (CPython's bit shuffle, without
/// the terms that depend on its table's state).
fn frozenset(d: &std::cell::RefCell<super::value::DictMap>) -> i64 {
    let shuffle = |h: u64| ((h ^ 89869747) ^ (h << 16)).wrapping_mul(3644798167);
    let Ok(m) = d.try_borrow() else {
        return 0;
    };
    let mut h = m
        .keys()
        .fold(0u64, |acc, k| acc ^ shuffle(value(&k.0, 0) as u64));
    h ^= (m.len() as u64 + 1).wrapping_mul(1927868237);
    h ^= (h >> 11) ^ (h >> 25);
    h = h.wrapping_mul(69069).wrapping_add(907133923);
    if h == u64::MAX {
        return 590923713;
    }
    h as i64
}
