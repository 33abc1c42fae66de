"""W5 parity: the final losses of benches/w5_mlp.dl's training runs, with real PyTorch.

Run: $KILN_PEERS_PYTHON tests/refs/w5_ref.py (torch 2.15.0, CPU). Uses
benches/peers/synth.py (the NumPy version of benches/synth.dl's counter-based generator)
and the exact workload of benches/w5_mlp.dl: MLP
784-256-256-10, 10 fixed batches of 64, mean cross-entropy, step s uses batch s % 10; the
loss of step 199's forward is the final loss. Prints it for SGD(lr=0.01) and
Adam(lr=1e-3). No timing.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../benches/peers"))
import numpy as np  # noqa: E402
import synth  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

NB, B, STEPS = 10, 64, 200


def final_loss(opt_name):
    torch.set_num_threads(2)
    X = synth.usym(1, (NB * B, 784))
    Y = synth.uint(2, NB * B, 10)
    W = [synth.usym(11, (784, 256)) * np.float32(1 / np.sqrt(784)), np.zeros(256, np.float32),
         synth.usym(12, (256, 256)) * np.float32(1 / 16), np.zeros(256, np.float32),
         synth.usym(13, (256, 10)) * np.float32(1 / 16), np.zeros(10, np.float32)]
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10))
    with torch.no_grad():
        for i, li in enumerate((0, 2, 4)):
            model[li].weight.copy_(torch.from_numpy(W[2 * i].T.copy()))
            model[li].bias.copy_(torch.from_numpy(W[2 * i + 1]))
    if opt_name == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    xs = [torch.from_numpy(X[k * B:(k + 1) * B].copy()) for k in range(NB)]
    ys = [torch.from_numpy(Y[k * B:(k + 1) * B].copy()) for k in range(NB)]
    loss = None
    for s in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs[s % NB]), ys[s % NB])
        loss.backward()
        opt.step()
    return loss.item()


print("torch", torch.__version__)
for name in ("sgd", "adam"):
    print(f"w5 {name} final loss: {final_loss(name)!r}")
