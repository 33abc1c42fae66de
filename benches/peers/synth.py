"""The benchmark data generator (benches/synth.dl's definition) in NumPy: a counter-based
hash, exactly reproducible in any language:
  lowbias32(x): x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16
  bits(seed, i) = lowbias32((i + seed * 0x9E3779B9) mod 2**32)      (all mod 2**32)
  usym(seed, shape): float32 2 * ((bits >> 8) * 2**-24) - 1 in row-major order
  uint(seed, n, m): bits % m as int64
"""
import numpy as np


def bits(seed, n):
    x = (np.arange(n, dtype=np.uint64) + ((seed * 0x9E3779B9) & 0xFFFFFFFF)) & 0xFFFFFFFF
    for shift, mul in ((16, 0x7FEB352D), (15, 0x846CA68B)):
        x ^= x >> np.uint64(shift)
        x = (x * np.uint64(mul)) & np.uint64(0xFFFFFFFF)
    x ^= x >> np.uint64(16)
    return x


def usym(seed, shape):
    n = int(np.prod(shape))
    u = (bits(seed, n) >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    return (np.float32(2.0) * u - np.float32(1.0)).astype(np.float32).reshape(shape)


def uint(seed, n, m):
    return (bits(seed, n) % np.uint64(m)).astype(np.int64)


def f32(x):
    return np.float32(x)


if __name__ == "__main__":
    # The values benches/synth.dl's selftest() checks.
    assert bits(1, 4).tolist() == [0x1FCE552, 0x9F505634, 0x79F4ECE, 0xF8B8B36]
    assert [b % 10 for b in bits(2, 5).tolist()] == [0, 4, 5, 5, 2]
    assert usym(1, (4,)).tolist() == [-0.9844697713851929, 0.24463915824890137,
                                      -0.94045090675354, -0.8785539865493774]
    print("ok")
