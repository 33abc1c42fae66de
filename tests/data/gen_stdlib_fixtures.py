"""Fixtures for tests/stdlib_io.rs, written by the reference implementations.

Not run by CI: the outputs are checked in. Regenerate with
`python3 tests/data/gen_stdlib_fixtures.py` (numpy 2.4.6, safetensors 0.8.0).
"""

import os

import numpy as np
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))

# What tests/stdlib_io.rs saves from a Kiln script, saved by the reference package.
save_file(
    {
        "w": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "step": np.array([7, -3], dtype=np.int64),
        "mask": np.array([[True], [False]]),
    },
    os.path.join(HERE, "stdlib_state.safetensors"),
    metadata={"format": "pt"},
)
# The same tensors as .npy files, written by NumPy.
np.save(os.path.join(HERE, "stdlib_w.npy"), np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
np.save(os.path.join(HERE, "stdlib_step.npy"), np.array([7, -3], dtype=np.int64))
np.save(os.path.join(HERE, "stdlib_mask.npy"), np.array([[True], [False]]))
