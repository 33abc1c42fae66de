"""Writes the reference fixtures in tests/data with NumPy and the safetensors package.

Not run by CI: the outputs are checked in and read by tests/io_npy.rs and
tests/io_safetensors.rs. Regenerate with `python3 tests/data/gen_fixtures.py`
(needs `pip install numpy safetensors`; generated with numpy 2.4.6, safetensors 0.8.0).
"""

import os

import numpy as np
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))


def out(name):
    return os.path.join(HERE, name)


def npy_fixtures():
    np.save(out("f32_2x3.npy"), np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1)
    np.save(out("f32_scalar.npy"), np.array(1.5, dtype=np.float32))
    np.save(out("i64_5.npy"), np.array([-2, -1, 0, 1, 2**40], dtype=np.int64))
    np.save(out("bool_2x2.npy"), np.array([[True, False], [False, True]]))
    np.save(out("f32_empty_0x3.npy"), np.zeros((0, 3), dtype=np.float32))
    # Read-side conversions.
    np.save(out("f64_3.npy"), np.array([0.1, -2.5, 1e300], dtype=np.float64))
    np.save(out("i32_3.npy"), np.array([-7, 0, 2**31 - 1], dtype=np.int32))
    np.save(out("f4_big_endian_2x2.npy"), np.array([[1, -2], [3.25, 4]], dtype=">f4"))
    np.save(out("i8_big_endian_3.npy"), np.array([1, -1, 2**33], dtype=">i8"))
    # Column-major: NumPy shows [[0, 1, 2], [3, 4, 5]] for this array.
    np.save(out("f32_fortran_2x3.npy"), np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    # Version 2.0 header (forced) and a large first dimension.
    with open(out("i64_v2.npy"), "wb") as f:
        a = np.array([[1, 2], [3, 4]], dtype=np.int64)
        np.lib.format.write_array(f, a, version=(2, 0))


def safetensors_fixtures():
    tensors = {
        "weight": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
        "step": np.array([7, -3], dtype=np.int64),
        "mask": np.array([[True], [False]]),
        "scalar": np.array(2.5, dtype=np.float32),
        "half": np.array([1.0, -0.5, 65504.0, 6e-8], dtype=np.float16),
        "ids32": np.array([1, -2, 3], dtype=np.int32),
    }
    save_file(tensors, out("reference.safetensors"), metadata={"format": "np", "epoch": "3"})


if __name__ == "__main__":
    npy_fixtures()
    safetensors_fixtures()
