"""Checks one exported model: onnx.checker accepts it (full check, with shape
inference), and ONNX Runtime's outputs equal Kiln's within 1e-5 relative
(|ort - kiln| / max(|kiln|, floor), floor 1e-3).

usage: python check.py DIR   (DIR holds model.onnx, in_NAME.npy per graph input and
out_NAME.npy per graph output, all written by the Kiln script; and optionally
floor.txt, a larger floor for outputs whose small values are differences of O(1)
terms, e.g. recurrent states near 0, whose float32 rounding is absolute)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main(d):
    path = os.path.join(d, "model.onnx")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    assert opset and opset[0] >= 17, opset
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(d, f"in_{i.name}.npy")) for i in sess.get_inputs()}
    names = [o.name for o in sess.get_outputs()]
    floor_path = os.path.join(d, "floor.txt")
    floor = 1e-3
    if os.path.exists(floor_path):
        with open(floor_path) as f:
            floor = float(f.read())
    got = sess.run(names, feeds)
    for name, g in zip(names, got):
        want = np.load(os.path.join(d, f"out_{name}.npy"))
        assert g.shape == want.shape, (name, g.shape, want.shape)
        assert g.dtype == want.dtype, (name, g.dtype, want.dtype)
        err = np.abs(g.astype(np.float64) - want) / np.maximum(np.abs(want), floor)
        worst = float(err.max()) if err.size else 0.0
        assert worst <= 1e-5, f"{name}: max relative error {worst:.3g}"
        print(f"{name}: ok (max relative error {worst:.2g})")


if __name__ == "__main__":
    main(sys.argv[1])
