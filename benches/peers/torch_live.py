"""Live PyTorch figures for the suite (benches/suite.rs) from a venv that has torch
but maybe not jax: W3 eager literal GELU and W4 matmul, written exactly as the peers'
shared/bench/peers/w3_gelu.py and w4_matmul.py time them (same data, same timeit,
2 threads). Run from a copy of shared/bench/peers (for common.py):

    python torch_live.py W3|W4
Writes results/W3_torch_live_t2.json or results/W4_torch_live_t2.json.
"""
import os
import sys

sys.path.insert(0, os.getcwd())  # the peers' dir: common.py
import common  # noqa: E402,F401  (sets the thread-count environment first)
from common import timeit, record, save  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(common.NTHREADS)


def w3():
    n = 4 * 1024 * 1024
    xn = np.linspace(-4, 4, n, dtype=np.float32)
    ref = 0.5 * xn * (1 + np.tanh(0.7978845608 * (xn + 0.044715 * xn * xn * xn)))
    xt = torch.from_numpy(xn.copy())

    def gelu_t(x):
        return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    err = float(np.max(np.abs(gelu_t(xt).numpy() - ref)))
    st = timeit(lambda: gelu_t(xt), reps=7, warmup=2)
    record("W3", "torch eager literal expr (live)", st, unit="ms", ms=st["median"] * 1e3,
           GBps=8 * n / st["median"] / 1e9, max_abs_err=err)
    save("W3_torch_live")


def w4():
    rng = np.random.default_rng(0)
    for n in (512, 1024):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        flop = 2.0 * n ** 3
        st = timeit(lambda: ta @ tb, reps=7, warmup=2, inner=20 if n == 512 else 5)
        record("W4", f"torch (MKL) n={n} (live)", st, unit="ms",
               GFLOPs=flop / st["median"] / 1e9, GFLOPs_best=flop / st["min"] / 1e9)
    save("W4_torch_live")


if __name__ == "__main__":
    {"W3": w3, "W4": w4}[sys.argv[1]]()
