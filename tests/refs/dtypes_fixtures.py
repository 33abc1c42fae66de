"""Writes the dtype fixtures read by tests/io_safetensors.rs and tests/io_npy.rs
(`dtypes_fixtures_load_as_is`): a float64/int32/uint8 state written by
`safetensors.torch.save_file` and a uint8 image and float64 array written by
`numpy.save`.

Usage (from the repository root): /work/peers-venv/bin/python tests/refs/dtypes_fixtures.py
(torch 2.15.0, safetensors, numpy). Never run by CI.
"""
import numpy as np
import torch
from safetensors.torch import save_file


def main():
    save_file(
        {
            "w64": torch.tensor([[0.1, -2.5], [1e300, 2.0**-1074]], dtype=torch.float64),
            "ids": torch.tensor([-7, 0, 2**31 - 1], dtype=torch.int32),
            "img": torch.tensor([[0, 128, 255]], dtype=torch.uint8),
        },
        "tests/data/dtypes_torch.safetensors",
    )
    np.save("tests/data/u8_image_2x2x3.npy", np.arange(12, dtype=np.uint8).reshape(2, 2, 3) * 21)


if __name__ == "__main__":
    main()
