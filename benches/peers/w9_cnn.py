"""W9 peers (benches/w9_cnn.dl): a CNN step on 64 of 2048 synthetic 1x28x28 images (NCHW):
conv 3x3 pad 1 (1->16) -> BatchNorm (training, momentum 0.1, eps 1e-5) -> ReLU -> 2x2
max-pool, again 16->32, flatten, Linear 1568->128, ReLU, Linear 128->10, mean
cross-entropy; SGD lr 0.01 momentum 0.9. Data: labels uint(52, 2048, 10), images
usym(51, (2048,1,28,28)) + 0.5 * usym(60 + label, (1,28,28)); batch s row j is image
(s*64 + j) % 2048. Init: conv/fc weights usym(70..73) / sqrt(fan_in) (fc stored
[in, out]), biases zero, BatchNorm ones/zeros, running stats zeros/ones. Protocol as W8;
checked: the loss of step 49 (0.2529095) and the sum of the 96 running statistics
(15.94996), both within 1e-3 relative.

    python w9_cnn.py torch_eager|torch_compile|jax_jit
"""
import sys

import peerlib
import numpy as np
import synth

N, C, B, S = 2048, 10, 64, 28
C1, C2, HID, FLAT = 16, 32, 128, 32 * 7 * 7
EXPECTED_LOSS, EXPECTED_BN = 0.2529095, 15.94996


def data():
    labels = synth.uint(52, N, C)
    patterns = np.stack([synth.usym(60 + c, (1, S, S)) for c in range(C)])
    images = synth.usym(51, (N, 1, S, S)) + synth.f32(0.5) * patterns[labels]
    return images.astype(np.float32), labels


IMAGES, LABELS = data()


def batch(s):
    rows = (s * B + np.arange(B)) % N
    return np.ascontiguousarray(IMAGES[rows]), LABELS[rows]


def params():
    def scaled(seed, shape, fan_in):
        return synth.usym(seed, shape) * synth.f32(1 / np.sqrt(fan_in))

    return {"conv1.W": scaled(70, (C1, 1, 3, 3), 9), "conv1.b": np.zeros(C1, np.float32),
            "bn1.w": np.ones(C1, np.float32), "bn1.b": np.zeros(C1, np.float32),
            "conv2.W": scaled(71, (C2, C1, 3, 3), C1 * 9), "conv2.b": np.zeros(C2, np.float32),
            "bn2.w": np.ones(C2, np.float32), "bn2.b": np.zeros(C2, np.float32),
            "fc1.W": scaled(72, (FLAT, HID), FLAT), "fc1.b": np.zeros(HID, np.float32),
            "fc2.W": scaled(73, (HID, C), HID), "fc2.b": np.zeros(C, np.float32)}


def stats():
    return {"bn1.mean": np.zeros(C1, np.float32), "bn1.var": np.ones(C1, np.float32),
            "bn2.mean": np.zeros(C2, np.float32), "bn2.var": np.ones(C2, np.float32)}


def torch_step(compiled):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(peerlib.NTHREADS)
    p = {k: torch.tensor(v, requires_grad=True) for k, v in params().items()}
    st = {k: torch.tensor(v) for k, v in stats().items()}

    def loss_fn(x, y):
        h = x
        for i in (1, 2):
            h = F.conv2d(h, p[f"conv{i}.W"], p[f"conv{i}.b"], padding=1)
            h = F.batch_norm(h, st[f"bn{i}.mean"], st[f"bn{i}.var"], p[f"bn{i}.w"],
                             p[f"bn{i}.b"], training=True, momentum=0.1, eps=1e-5)
            h = F.max_pool2d(F.relu(h), 2)
        h = F.relu(h.flatten(1) @ p["fc1.W"] + p["fc1.b"])
        return F.cross_entropy(h @ p["fc2.W"] + p["fc2.b"], y)

    fwd = torch.compile(loss_fn) if compiled else loss_fn
    opt = torch.optim.SGD(list(p.values()), lr=0.01, momentum=0.9)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = fwd(x, y)
        loss.backward()
        opt.step()
        return loss

    return (step, lambda s: tuple(map(torch.from_numpy, batch(s))),
            lambda loss: float(loss.detach()),
            lambda: float(sum(v.double().sum() for v in st.values())),
            peerlib.dynamo_figures if compiled else None)


def jax_step():
    import jax
    import jax.numpy as jnp
    from jax import lax
    traces = [0]

    def layer(h, p, st, i):
        h = lax.conv_general_dilated(h, p[f"conv{i}.W"], (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        h = h + p[f"conv{i}.b"][None, :, None, None]
        n = h.shape[0] * h.shape[2] * h.shape[3]
        m = h.mean((0, 2, 3))
        c = h - m[None, :, None, None]
        v = (c * c).mean((0, 2, 3))
        h = c / jnp.sqrt(v + 1e-5)[None, :, None, None] * p[f"bn{i}.w"][None, :, None, None] \
            + p[f"bn{i}.b"][None, :, None, None]
        m, v = lax.stop_gradient(m), lax.stop_gradient(v)
        new = {f"bn{i}.mean": 0.9 * st[f"bn{i}.mean"] + 0.1 * m,
               f"bn{i}.var": 0.9 * st[f"bn{i}.var"] + 0.1 * v * (n / (n - 1))}
        h = lax.reduce_window(jax.nn.relu(h), -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2),
                              "VALID")
        return h, new

    def loss_fn(p, st, x, y):
        h, new1 = layer(x, p, st, 1)
        h, new2 = layer(h, p, st, 2)
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["fc1.W"] + p["fc1.b"])
        lg = h @ p["fc2.W"] + p["fc2.b"]
        loss = (jax.nn.logsumexp(lg, -1) - jnp.take_along_axis(lg, y[:, None], 1)[:, 0]).mean()
        return loss, {**new1, **new2}

    @jax.jit
    def update(p, buf, st, x, y):
        traces[0] += 1  # runs only while tracing
        (loss, st), g = jax.value_and_grad(loss_fn, has_aux=True)(p, st, x, y)
        buf = {k: 0.9 * buf[k] + g[k] for k in p}
        return {k: p[k] - 0.01 * buf[k] for k in p}, buf, st, loss

    p = {k: jnp.asarray(a) for k, a in params().items()}
    state = [p, {k: jnp.zeros_like(a) for k, a in p.items()},
             {k: jnp.asarray(a) for k, a in stats().items()}]

    def step(x, y):
        *state[:], loss = update(*state, x, y)
        return loss

    return (step, lambda s: tuple(map(jnp.asarray, batch(s))),
            lambda loss: float(jax.block_until_ready(loss)),
            lambda: float(sum(np.asarray(v, np.float64).sum() for v in state[2].values())),
            lambda: {"compiles": traces[0]})


def main(impl):
    step, to_batch, value, bn_sum, figures = jax_step() if impl == "jax_jit" else torch_step(
        impl == "torch_compile")

    def bn_check():
        bn = bn_sum()
        return abs(bn - EXPECTED_BN) <= 1e-3 * EXPECTED_BN, f"bn_check={bn!r}"

    peerlib.train("w9_" + impl, step, to_batch, value, EXPECTED_LOSS, 1e-3, 50, 30,
                  checks=bn_check, figures=figures)


main(sys.argv[1])
