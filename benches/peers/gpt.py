"""The W8/W10 model and data (benches/gpt.dl's definition) for the torch and jax peers:
a pre-LN character-level GPT, V 65, D 128, 4 heads of 32, 2 blocks, context T 64, with
every matrix stored [in, out] and applied as x @ W + b.
  tokens  r = uint(21, 20000, 4); t[0] = r[0]; t[i] = (3 t[i-1] + r[i]) % 65
  batch s row j starts at ((s*16 + j) * 97) % (20000 - 65): x = t[st:st+64], y = t[st+1:st+65]
  init    wte = usym(30) * 0.1, wpe = usym(31) * 0.1; block l (k = 40 + 10 l): Wqkv, Wo,
          W1 = usym(k..k+2) / sqrt(D), W2 = usym(k+3) / sqrt(4D); head usym(90) / sqrt(D);
          biases zero, LayerNorms ones/zeros (eps 1e-5); 1/sqrt(n) rounded to float32
  block   x += proj(causal softmax attention of LN1(x)); x += W2(gelu_erf(W1(LN2(x))))
"""
import numpy as np
import synth

V, D, H, L, T, B = 65, 128, 4, 2, 64, 16
HS = D // H
NTOK = 20000


def tokens():
    r = synth.uint(21, NTOK, 4)
    t = np.empty(NTOK, np.int64)
    t[0] = r[0]
    for i in range(1, NTOK):
        t[i] = (3 * t[i - 1] + r[i]) % V
    return t


TOKENS = tokens()


def batch(s):
    starts = [((s * B + j) * 97) % (NTOK - T - 1) for j in range(B)]
    return (np.stack([TOKENS[a:a + T] for a in starts]),
            np.stack([TOKENS[a + 1:a + T + 1] for a in starts]))


def params():
    def scaled(seed, shape, fan_in):
        return synth.usym(seed, shape) * synth.f32(1 / np.sqrt(fan_in))

    ones, zeros = np.ones(D, np.float32), np.zeros(D, np.float32)
    p = {"wte": synth.usym(30, (V, D)) * synth.f32(0.1),
         "wpe": synth.usym(31, (T, D)) * synth.f32(0.1)}
    for l in range(L):
        k = 40 + 10 * l
        p.update({f"{l}.ln1.w": ones, f"{l}.ln1.b": zeros, f"{l}.ln2.w": ones,
                  f"{l}.ln2.b": zeros,
                  f"{l}.Wqkv": scaled(k, (D, 3 * D), D), f"{l}.bqkv": np.zeros(3 * D, np.float32),
                  f"{l}.Wo": scaled(k + 1, (D, D), D), f"{l}.bo": zeros,
                  f"{l}.W1": scaled(k + 2, (D, 4 * D), D), f"{l}.b1": np.zeros(4 * D, np.float32),
                  f"{l}.W2": scaled(k + 3, (4 * D, D), 4 * D), f"{l}.b2": zeros})
    p.update({"lnf.w": ones, "lnf.b": zeros, "Whead": scaled(90, (D, V), D),
              "bhead": np.zeros(V, np.float32)})
    return {k: v.copy() for k, v in p.items()}


def logits(p, idx, ops):
    """The forward, written once over `ops` (torch's or jax's): idx (n, t) -> (n, t, V)."""
    n, t = idx.shape
    x = p["wte"][idx] + p["wpe"][:t]
    for l in range(L):
        h = ops.ln(x, p[f"{l}.ln1.w"], p[f"{l}.ln1.b"])
        qkv = h @ p[f"{l}.Wqkv"] + p[f"{l}.bqkv"]
        q, k, v = (ops.heads(qkv[..., i * D:(i + 1) * D], n, t) for i in range(3))
        att = ops.causal_softmax((q @ ops.swap(k)) * (1.0 / np.sqrt(HS)), t)
        x = x + ops.merge(att @ v, n, t) @ p[f"{l}.Wo"] + p[f"{l}.bo"]
        h = ops.ln(x, p[f"{l}.ln2.w"], p[f"{l}.ln2.b"])
        x = x + ops.gelu(h @ p[f"{l}.W1"] + p[f"{l}.b1"]) @ p[f"{l}.W2"] + p[f"{l}.b2"]
    return ops.ln(x, p["lnf.w"], p["lnf.b"]) @ p["Whead"] + p["bhead"]


class TorchOps:
    def __init__(self):
        import torch
        import torch.nn.functional as F
        self.torch, self.F = torch, F
        self.mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    def ln(self, x, w, b):
        return self.F.layer_norm(x, (D,), w, b, 1e-5)

    def heads(self, a, n, t):
        return a.reshape(n, t, H, HS).transpose(1, 2)

    def swap(self, k):
        return k.transpose(-2, -1)

    def merge(self, y, n, t):
        return y.transpose(1, 2).reshape(n, t, D)

    def causal_softmax(self, att, t):
        return att.masked_fill(self.mask[:t, :t], float("-inf")).softmax(dim=-1)

    def gelu(self, x):
        return self.F.gelu(x)


class JaxOps:
    def __init__(self):
        import jax
        import jax.numpy as jnp
        self.jax, self.jnp = jax, jnp
        self.mask = jnp.triu(jnp.ones((T, T), bool), k=1)

    def ln(self, x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / self.jnp.sqrt(var + 1e-5) * w + b

    def heads(self, a, n, t):
        return a.reshape(n, t, H, HS).transpose(0, 2, 1, 3)

    def swap(self, k):
        return k.transpose(0, 1, 3, 2)

    def merge(self, y, n, t):
        return y.transpose(0, 2, 1, 3).reshape(n, t, D)

    def causal_softmax(self, att, t):
        return self.jax.nn.softmax(self.jnp.where(self.mask[:t, :t], -self.jnp.inf, att), -1)

    def gelu(self, x):
        return self.jax.nn.gelu(x, approximate=False)
