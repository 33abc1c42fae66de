"""W4 peer (benches/w4_matmul.dl): float32 matmul with torch at n = 512 or 1024, checked
against a float64 product on 8 sampled entries, timed over 20 (512) or 5 (1024) products.

    python w4_matmul.py 512|1024
"""
import sys

import peerlib
import numpy as np
import torch


def main(n):
    torch.set_num_threads(peerlib.NTHREADS)
    name = f"w4_torch_{n}"
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
    b = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
    c = a @ b
    bad = []
    for k in range(8):
        i, j = (k * 97) % n, (k * 31 + 5) % n
        ref = float(a[i].double() @ b[:, j].double())
        if abs(float(c[i, j]) - ref) > 1e-3 * (1.0 + abs(ref)):
            bad.append((i, j))
    if not peerlib.check(name, not bad, f"c differs from the float64 product at {bad}"):
        return
    inner = 20 if n == 512 else 5

    def many():
        for _ in range(inner):
            a @ b

    med, lo, hi = peerlib.measure(many, reps=7, warmup=2)
    flop = 2.0 * n ** 3
    peerlib.report(name, (med / inner, lo / inner, hi / inner), GFLOPs=flop / med * inner / 1e9,
                   GFLOPs_best=flop / lo * inner / 1e9)


main(int(sys.argv[1]))
