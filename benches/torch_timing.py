"""Timing helpers of the PyTorch side of the layer benchmarks (seq_layers_torch.py,
norm_layers_torch.py): the median, min and max of `reps` calls after one warm-up, printed
as the BENCH lines benches/harness.dl prints."""
import time


def measure(f, reps=7):
    f()
    s = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        s.append(time.perf_counter() - t0)
    s.sort()
    return s[len(s) // 2], s[0], s[-1]


def report(name, st):
    print(f"BENCH {name} median={st[0]!r} min={st[1]!r} max={st[2]!r}")
