"""W10 peers (benches/w10_generate.dl): greedy generation with gpt.py's model and initial
parameters, batch 1, no KV cache: from the prompt tokens[0:4], 60 times the whole
context (n = 4..63) goes through the model and the argmax of the last position's logits
(lowest index on ties) is appended; the id comes back as a Python int every step.
Checked: sum over k = 4..63 of k * ctx[k] == 79073. Protocol: repetition 0 is the
warm-up (first_step_s = its first call, first_rep_s = all of it, every compile
included), then 5 timed repetitions -> tokens/s; compiles over the whole run
(torch.compile's graphs; jax.jit's traces, one per length).

    python w10_generate.py torch_eager|torch_compile|jax_jit
"""
import sys
import time

import gpt
import peerlib
import numpy as np

PROMPT, NGEN, CHECKSUM = 4, 60, 79073


def torch_next(compiled):
    import torch
    torch.set_num_threads(peerlib.NTHREADS)
    torch.set_grad_enabled(False)
    ops = gpt.TorchOps()
    p = {k: torch.tensor(v) for k, v in gpt.params().items()}

    def forward(idx):
        return gpt.logits(p, idx, ops)[0, -1].argmax()

    f = torch.compile(forward) if compiled else forward
    figures = peerlib.dynamo_figures if compiled else (lambda: {"compiles": 0})
    return (lambda ids: int(f(torch.from_numpy(ids)))), figures


def jax_next():
    import jax
    ops = gpt.JaxOps()
    p = {k: jax.numpy.asarray(v) for k, v in gpt.params().items()}
    traces = [0]

    @jax.jit
    def forward(p, idx):
        traces[0] += 1  # runs only while tracing
        return gpt.logits(p, idx, ops)[0, -1].argmax()

    return (lambda ids: int(forward(p, ids))), (lambda: {"compiles": traces[0]})


def main(impl):
    name = "w10_" + impl
    next_token, figures = jax_next() if impl == "jax_jit" else torch_next(
        impl == "torch_compile")

    def generate(firsts=None):
        ctx = np.zeros((1, PROMPT + NGEN), np.int64)
        ctx[0, :PROMPT] = gpt.TOKENS[:PROMPT]
        for n in range(PROMPT, PROMPT + NGEN):
            t0 = time.perf_counter()
            ctx[0, n] = next_token(ctx[:, :n])
            if firsts is not None and not firsts:
                firsts.append(time.perf_counter() - t0)
        return ctx[0].tolist()

    firsts = []
    t0 = time.perf_counter()
    toks = generate(firsts)
    first_rep = time.perf_counter() - t0
    checksum = sum(k * toks[k] for k in range(PROMPT, PROMPT + NGEN))
    if not peerlib.check(name, checksum == CHECKSUM, f"checksum={checksum}"):
        return
    same = [True]

    def rep():
        same[0] = same[0] and generate() == toks

    st = peerlib.measure(rep, reps=5, warmup=0)
    if peerlib.check(name, same[0], "a repetition generated other tokens"):
        peerlib.report(name, (st[0] / NGEN, st[1] / NGEN, st[2] / NGEN),
                       tokens_per_s=NGEN / st[0], first_step_s=firsts[0],
                       first_rep_s=first_rep, checksum=checksum, **figures())


main(sys.argv[1])
