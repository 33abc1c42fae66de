"""PyTorch's side of benches/dataloader.dl: one shuffled epoch of DataLoader over a
TensorDataset (60000 x 784 float32, int64 labels), batch 64, median of 5 after a warm-up.

Run: /work/peers-venv/bin/python tests/refs/dataloader_bench.py
"""
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
N = 60000
X = torch.randn(N, 784)
Y = torch.randint(0, 10, (N,))
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)


def epoch():
    n = 0
    for xb, yb in loader:
        n += len(yb)
    assert n == N


epoch()
times = []
for _ in range(5):
    t0 = time.perf_counter()
    epoch()
    times.append(time.perf_counter() - t0)
times.sort()
print(f"BENCH torch_dataloader_tensordataset median={times[2]:.4f} min={times[0]:.4f} max={times[-1]:.4f} batches={len(loader)}")
