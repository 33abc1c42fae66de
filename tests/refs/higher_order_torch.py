"""PyTorch reference for tests/golden/torchapi/api_higher_order.dl (higher-order
gradients, issue 22): runs that program under torch with Kiln's names bound to torch's
(`autograd` is torch.autograd, `nn` / `nn.functional` as in golden_torch.py, every public
torch function a global). Its output is the expected .out file, byte for byte:

    /work/peers-venv/bin/python tests/refs/higher_order_torch.py > \
        tests/golden/torchapi/api_higher_order.out       # torch 2.15.0, CPU

Never run by CI."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_torch import kiln_nn  # noqa: E402
from tensor_api_torch import run  # noqa: E402


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    run(os.path.join(here, "..", "golden", "torchapi", "api_higher_order.dl"), {"nn": kiln_nn()})


if __name__ == "__main__":
    main()
