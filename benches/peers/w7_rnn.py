"""W7 peers (benches/w7_rnn.dl): an Elman RNN (in 32, hidden 64, 10 classes) over 500
sequences of lengths 5..50, forward, backward and SGD (lr 0.01) per sequence; data from
synth (lengths 5 + uint(21, 500, 46), X = usym(22, (sum, 32)), classes uint(23, 500, 10),
Wxh = usym(31) / sqrt(32), Whh = usym(32) / 8, Why = usym(33) / 8, biases zero).
Protocol: epoch 1 timed alone (every compile included), its mean loss checked (2.315408,
1e-4), then 5 timed epochs -> sequences/s.

    python w7_rnn.py torch_eager|jax_jit_scan

jax_jit_scan: the per-sequence step jitted, the time loop a lax.scan (one compile per
distinct length).
"""
import sys
import time

import peerlib
import numpy as np
import synth

D, H, C, NSEQ, LR = 32, 64, 10, 500, 0.01


def data():
    lens = (5 + synth.uint(21, NSEQ, 46)).tolist()
    x = synth.usym(22, (sum(lens), D))
    offs = np.cumsum([0] + lens)
    xs = [x[offs[i]:offs[i + 1]] for i in range(NSEQ)]
    ys = synth.uint(23, NSEQ, C).tolist()
    params = [synth.usym(31, (D, H)) * synth.f32(1 / np.sqrt(32)),
              synth.usym(32, (H, H)) * synth.f32(1 / 8), np.zeros(H, np.float32),
              synth.usym(33, (H, C)) * synth.f32(1 / 8), np.zeros(C, np.float32)]
    return xs, ys, params


def torch_eager(xs, ys, params):
    import torch
    torch.set_num_threads(peerlib.NTHREADS)
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    txs = [torch.from_numpy(x) for x in xs]

    def one(i):
        wxh, whh, bh, why, by = ps
        h = torch.zeros(H)
        for t in range(txs[i].shape[0]):
            h = torch.tanh(txs[i][t] @ wxh + h @ whh + bh)
        logits = h @ why + by
        loss = torch.logsumexp(logits, 0) - logits[ys[i]]
        loss.backward()
        with torch.no_grad():
            for p in ps:
                p -= LR * p.grad
                p.grad = None
        return float(loss)

    return one, lambda: {}


def jax_scan(xs, ys, params):
    import jax
    import jax.numpy as jnp
    traces = [0]

    def loss_fn(p, x, y):
        wxh, whh, bh, why, by = p
        h, _ = jax.lax.scan(lambda h, xt: (jnp.tanh(xt @ wxh + h @ whh + bh), None),
                            jnp.zeros(H), x)
        logits = h @ why + by
        return jax.nn.logsumexp(logits) - logits[y]

    @jax.jit
    def step(p, x, y):
        traces[0] += 1  # runs only while tracing
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return [a - LR * b for a, b in zip(p, g)], loss

    state = [[jnp.asarray(p) for p in params]]
    jxs = [jnp.asarray(x) for x in xs]
    jys = [jnp.asarray(y, dtype=jnp.int32) for y in ys]

    def one(i):
        state[0], loss = step(state[0], jxs[i], jys[i])
        return float(loss)

    return one, lambda: {"compiles": traces[0]}


def main(impl):
    name = "w7_" + impl
    xs, ys, params = data()
    one, figures = (torch_eager if impl == "torch_eager" else jax_scan)(xs, ys, params)

    def epoch():
        return sum(one(i) for i in range(NSEQ)) / NSEQ

    t0 = time.perf_counter()
    mean1 = epoch()
    first = time.perf_counter() - t0
    if peerlib.check(name, abs(mean1 - 2.315408) <= 1e-4, f"epoch1_mean_loss={mean1!r}"):
        st = peerlib.measure(epoch, reps=5, warmup=0)
        peerlib.report(name, st, seq_per_s=NSEQ / st[0], first_epoch_s=first,
                       epoch1_mean_loss=mean1, **figures())


main(sys.argv[1])
