"""W3 peers (benches/w3_gelu.dl): 0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x))) written
out over 4M float32 (linspace -4..4); torch eager, torch.compile and jax.jit. Checked
against float64 at 2000 evenly spread points (max abs error <= 1e-6) before timing.

    python w3_gelu.py torch_eager|torch_compile|jax_jit
"""
import sys
import time

import peerlib
import numpy as np

N = 4 * 1024 * 1024


def gelu(x, tanh):
    return 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def max_err(x, y, samples=2000):
    idx = np.arange(samples) * (N // samples)
    v = x[idx].astype(np.float64)
    return float(np.max(np.abs(y[idx].astype(np.float64) - gelu(v, np.tanh))))


def main(mode):
    xn = np.linspace(-4, 4, N, dtype=np.float32)
    name = "w3_" + mode
    if mode == "jax_jit":
        import jax
        import jax.numpy as jnp
        f = jax.jit(lambda x: gelu(x, jnp.tanh))
        x = jnp.asarray(xn)

        def call():
            return f(x).block_until_ready()
        to_np = np.asarray
    else:
        import torch
        torch.set_num_threads(peerlib.NTHREADS)
        g = lambda x: gelu(x, torch.tanh)  # noqa: E731
        f = torch.compile(g) if mode == "torch_compile" else g
        x = torch.from_numpy(xn)

        def call():
            return f(x)
        to_np = lambda t: t.numpy()  # noqa: E731
    t0 = time.perf_counter()
    call()
    first = time.perf_counter() - t0
    err = max_err(xn, to_np(call()))
    if peerlib.check(name, err <= 1e-6, f"max_abs_err={err!r}"):
        eager = mode == "torch_eager"
        st = peerlib.measure(call, reps=7 if eager else 11, warmup=2 if eager else 3)
        peerlib.report(name, st, ms=st[0] * 1e3, GBps=8 * N / st[0] / 1e9, max_abs_err=err,
                       first_step_s=first)


main(sys.argv[1])
