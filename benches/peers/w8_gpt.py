"""W8 peers (benches/w8_gpt.dl): one training step of the character-level GPT of gpt.py
(batch 16 x 64 tokens, mean cross-entropy), AdamW (torch.optim.AdamW semantics, lr 1e-3,
betas 0.9/0.999, eps 1e-8, weight decay 0.01 on every parameter). Protocol: step 0 timed
alone, steps 1..49, the loss of step 49 checked (1.5691735744476318, 1e-4 relative),
then 5 timed repetitions of the steps on the batches of steps 50..79.

    python w8_gpt.py torch_eager|torch_compile|jax_jit
"""
import sys

import gpt
import peerlib

LR, B1, B2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 0.01
EXPECTED = 1.5691735744476318


def torch_step(compiled):
    import torch
    torch.set_num_threads(peerlib.NTHREADS)
    ops = gpt.TorchOps()
    p = {k: torch.tensor(v, requires_grad=True) for k, v in gpt.params().items()}

    def loss_fn(x, y):
        return ops.F.cross_entropy(gpt.logits(p, x, ops).reshape(-1, gpt.V), y.reshape(-1))

    fwd = torch.compile(loss_fn) if compiled else loss_fn
    opt = torch.optim.AdamW(list(p.values()), lr=LR, betas=(B1, B2), eps=EPS,
                            weight_decay=WD)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = fwd(x, y)
        loss.backward()
        opt.step()
        return loss

    return (step, lambda s: tuple(map(torch.from_numpy, gpt.batch(s))),
            lambda loss: float(loss.detach()), peerlib.dynamo_figures if compiled else None)


def jax_step():
    import jax
    import jax.numpy as jnp
    ops = gpt.JaxOps()
    traces = [0]

    def loss_fn(p, x, y):
        lg = gpt.logits(p, x, ops).reshape(-1, gpt.V)
        picked = jnp.take_along_axis(lg, y.reshape(-1, 1), 1)[:, 0]
        return (jax.nn.logsumexp(lg, axis=-1) - picked).mean()

    @jax.jit
    def update(p, m, v, t, x, y):
        traces[0] += 1  # runs only while tracing
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        t = t + 1
        m = {k: B1 * m[k] + (1 - B1) * g[k] for k in p}
        v = {k: B2 * v[k] + (1 - B2) * g[k] * g[k] for k in p}
        p = {k: p[k] * (1 - LR * WD) - (LR / (1 - B1 ** t)) * m[k]
             / (jnp.sqrt(v[k]) / jnp.sqrt(1 - B2 ** t) + EPS) for k in p}
        return p, m, v, t, loss

    p = {k: jnp.asarray(a) for k, a in gpt.params().items()}
    state = [p, {k: jnp.zeros_like(a) for k, a in p.items()},
             {k: jnp.zeros_like(a) for k, a in p.items()}, jnp.float32(0)]

    def step(x, y):
        *state[:], loss = update(*state, x, y)
        return loss

    return (step, lambda s: tuple(map(jnp.asarray, gpt.batch(s))),
            lambda loss: float(jax.block_until_ready(loss)),
            lambda: {"compiles": traces[0]})


def main(impl):
    step, batch, value, figures = jax_step() if impl == "jax_jit" else torch_step(
        impl == "torch_compile")
    peerlib.train("w8_" + impl, step, batch, value, EXPECTED, 1e-4, 50, 30, figures=figures)


main(sys.argv[1])
