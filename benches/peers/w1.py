"""W1 on CPython: runs Kiln's own workload file, benches/<name>.dl (plain Python: the
same program, the same check, the same timing), under this interpreter.

    python3 w1.py w1_fib|w1_loop|w1_micrograd
"""
import os
import runpy
import sys

import peerlib

runpy.run_path(os.path.join(peerlib.BENCHES, sys.argv[1] + ".dl"), run_name="__main__")
