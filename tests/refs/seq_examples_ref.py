"""The losses of examples/lstm_classifier.dl and examples/tiny_transformer_lm.dl under
real PyTorch. Both examples are PyTorch scripts (`import torch`, a DataLoader with a
seeded shuffle, deterministic data and initial weights), so this runs the same files
unchanged under torch; tests/stdlib_examples.rs compares Kiln's printed "first loss"
(the first mini-batch's) and "final loss" (the whole data set's, after training) with
the numbers printed here.

Run: /work/peers-venv/bin/python tests/refs/seq_examples_ref.py   (torch 2.15.0, CPU)

Output (torch 2.15.0):
  lstm_classifier.dl: steps 18, first loss 1.077484, final loss 0.774063
  tiny_transformer_lm.dl: steps 20, first loss 3.314131, final loss 2.842847
"""
import contextlib
import io
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def run(name):
    path = os.path.join(HERE, "..", "..", "examples", name)
    with open(path) as f:
        src = f.read()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(src, path, "exec"), {"__name__": "__main__"})
    return out.getvalue()


for name in ["lstm_classifier.dl", "tiny_transformer_lm.dl"]:
    print(name)
    print(run(name), end="")
