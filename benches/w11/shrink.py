"""Prints a w11 program at its small size (benches/w11/small.txt): shrink.py NAME.

The same rewrite as tests/w11.rs: each NAME=VALUE of the program's line in small.txt
replaces the program's top-level line `NAME = ...` (which must exist).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def sizes(name):
    with open(os.path.join(HERE, "small.txt")) as f:
        for line in f:
            parts = line.split()
            if parts and not parts[0].startswith("#") and parts[0] == name:
                return [p.split("=", 1) for p in parts[1:]]
    raise SystemExit("no sizes for " + name)


def shrink(name):
    with open(os.path.join(HERE, name + ".py")) as f:
        lines = f.read().split("\n")
    for key, value in sizes(name):
        hits = [i for i, l in enumerate(lines) if l.startswith(key + " = ")]
        if len(hits) != 1:
            raise SystemExit("%s: %d lines `%s = ...`" % (name, len(hits), key))
        lines[hits[0]] = key + " = " + value
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(shrink(sys.argv[1]))
