"""Shared by the peers' programs (benches/peers/*.py): the thread settings, Kiln's own
benches/harness.dl (plain Python, loaded as the module `harness`: the same timing,
`BENCH` lines and checks as Kiln's workloads), the training protocol of W5/W8/W9 and the
torch.compile counters. Import it before numpy, torch or jax.
"""
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import time

NTHREADS = int(os.environ.get("BENCH_THREADS", "2"))
for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
           "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_v, str(NTHREADS))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# A cold torch.compile: a fresh inductor cache for every run.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="kiln_peers_"))

BENCHES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_dl(name):
    """Loads benches/<name>.dl (a plain-Python Kiln file) as the module `name`."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(BENCHES, name + ".dl"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    sys.modules[name] = module
    loader.exec_module(module)
    return module


harness = load_dl("harness")
measure, report, check = harness.measure, harness.report, harness.check


def train(name, step, batch, value, expected, rtol, warm, per, fixed=True, checks=None,
          figures=None):
    """The W5/W8/W9 protocol: step 0 timed alone (the first step, compiling included),
    steps 1..warm-1, the loss of step warm-1 checked against `expected` (relative
    `rtol`; `checks()` -> (ok, detail) for more), then 5 timed repetitions of `per`
    steps (the batches of steps warm..warm+per-1 every time when `fixed`, else training
    goes on through new batches). `step(x, y)` -> loss, `value(loss)` -> float,
    `figures()` -> extra figures reported after timing (compiles, graph breaks)."""
    t0 = time.perf_counter()
    value(step(*batch(0)))
    first = time.perf_counter() - t0
    last = None
    for s in range(1, warm):
        last = step(*batch(s))
    final = value(last)
    ok, detail = abs(final - expected) <= rtol * abs(expected), ""
    if checks is not None:
        more, detail = checks()
        ok = ok and more
    if not check(name, ok, f"final_loss={final!r} expected={expected!r} {detail}"):
        return
    fixed_batches = [batch(s) for s in range(warm, warm + per)] if fixed else None
    at = [warm]

    def rep():
        out = None
        for k in range(per):
            out = step(*(fixed_batches[k] if fixed else batch(at[0] + k)))
        at[0] += per
        value(out)

    st = measure(rep, reps=5, warmup=0)
    extra = figures() if figures is not None else {}
    report(name, (st[0] / per, st[1] / per, st[2] / per), steps_per_s=per / st[0],
           first_step_s=first, final_loss=final, **extra)


def dynamo_figures():
    """torch.compile's counters: graphs compiled and graph breaks so far."""
    from torch._dynamo.utils import counters
    return {"compiles": int(counters["stats"].get("unique_graphs", 0)),
            "fallbacks": int(sum(counters["graph_break"].values()))}
