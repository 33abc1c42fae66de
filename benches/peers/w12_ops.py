"""W12 peer (benches/w12_ops.dl): runs that same file under PyTorch eager (W12_PEER=torch),
so every op, size and check is Kiln's; prints `BENCH w12_torch_<op>_<size>` lines.

    python w12_ops.py
"""
import os

os.environ["W12_PEER"] = "torch"
import peerlib  # noqa: E402  (sets the thread counts before torch loads)

peerlib.load_dl("w12_ops")
