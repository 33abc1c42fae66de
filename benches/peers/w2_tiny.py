"""W2 peers (benches/w2_tiny.dl): y = x * 2.0 + 1.0 on 16 float32, 100k iterations, two
ops per iteration; NumPy, and torch eager recording the graph (requires_grad).

    python w2_tiny.py numpy|torch_grad
"""
import sys

import peerlib
import numpy as np

ITERS = 100_000


def loop(x):
    y = None
    for _ in range(ITERS):
        y = x * 2.0 + 1.0
    return y


def main(mode):
    if mode == "numpy":
        name, x = "w2_numpy", np.arange(16, dtype=np.float32)
    else:
        import torch  # only here: the numpy run's peak RSS is numpy's
        torch.set_num_threads(peerlib.NTHREADS)
        name, x = "w2_torch_grad", torch.arange(16, dtype=torch.float32, requires_grad=True)
    head = [float(v) for v in loop(x)[:3].tolist()]
    if peerlib.check(name, head == [1.0, 3.0, 5.0], f"y[:3]={head}"):
        st = peerlib.measure(lambda: loop(x), reps=5)
        peerlib.report(name, st, us_per_op=st[0] / ITERS / 2 * 1e6,
                       us_per_op_best=st[1] / ITERS / 2 * 1e6)


main(sys.argv[1])
