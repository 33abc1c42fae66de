#!/usr/bin/env bash
# w11 interpreter benchmarks: CPython vs Kiln on the same .py files.
# (With a CG mode and a default KILN.)
#
#   ./run.sh                    # Kiln (target/release/kiln if built) vs CPython
#   KILN= ./run.sh              # CPython only (checks every program runs)
#   KILN=/path/to/kiln ./run.sh # another Kiln binary
#   RUNS=3 ./run.sh nbody fannkuch   # fewer runs / a subset
#   CG=1 ./run.sh               # callgrind instruction counts instead of times
#
# CG=1: each program at its small size (small.txt, rewritten by shrink.py) under
# `valgrind --tool=callgrind`, for Kiln and CPython: noise-free counts for before/after
# comparisons on a loaded machine, and their ratio (a rough proxy of the time ratio);
# `net` takes each interpreter's start-up (an empty program) off first.
# W1 (benches/w1_*.dl) is counted for Kiln too.
#
# For each program: RUNS wall-clock timings of the whole process for
# `python3 NAME.py` and (if KILN is set) `$KILN NAME.py`, interleaved
# (py, kiln, py, kiln, ...) so that background load hits both alike. Prints
# the medians, the ratio kiln/python, and at the end the geometric mean of the
# ratios over the programs Kiln ran correctly. A Kiln run that exits non-zero
# is reported with its first error line; one whose stdout differs from
# CPython's is reported as a mismatch (first differing line). Exit status is 1
# only if CPython itself fails on a program (or is non-deterministic).
set -u
cd "$(dirname "$0")" || exit 2

PROGRAMS="nbody spectral_norm richards_like nqueens fannkuch dict_strings
raytrace_like json_like closures_sort deltablue_like"
if [ $# -gt 0 ]; then
    PROGRAMS="$*"
fi
RUNS=${RUNS:-5}
if [ -z "${KILN+set}" ] && [ -x ../../target/release/kiln ]; then
    KILN=$(cd ../../target/release && pwd)/kiln
fi
KILN=${KILN:-}
# Time the real interpreter, not a wrapper such as a pyenv shim (the shim
# alone costs 0.1-0.3 s per start on a loaded machine).
PY=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# cg_count CMD...: the instructions callgrind counts for one run (single-threaded).
cg_count() {
    KILN_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 \
        >/dev/null | awk '/Collected/ {print $4}'
}

if [ -n "${CG:-}" ]; then
    # Start-up (an empty program) is counted once and taken off both sides for the
    # `net` ratio: CPython's start-up alone can outweigh a small program's work.
    echo "pass" > "$TMP/empty.py"
    p0=$(cg_count "$PY" "$TMP/empty.py")
    k0=0
    if [ -n "$KILN" ]; then
        k0=$(cg_count "$KILN" "$TMP/empty.py")
    fi
    echo "# callgrind instructions at the sizes of small.txt (kiln: ${KILN:-unset})"
    echo "# start-up (empty program): python $p0, kiln $k0; net = minus start-up"
    printf '%-16s %14s %14s %9s %9s\n' program python_instr kiln_instr kiln/py net
    for name in $PROGRAMS; do
        "$PY" shrink.py "$name" > "$TMP/$name.py" || exit 2
        p=$(cg_count "$PY" "$TMP/$name.py")
        k=-
        r=-
        n=-
        if [ -n "$KILN" ]; then
            k=$(cg_count "$KILN" "$TMP/$name.py")
            r=$("$PY" -c "print('%.2fx' % ($k / $p))")
            n=$("$PY" -c "print('%.2fx' % (($k - $k0) / max($p - $p0, 1)))")
        fi
        printf '%-16s %14s %14s %9s %9s\n' "$name" "$p" "$k" "$r" "$n"
    done
    if [ -n "$KILN" ] && [ $# -eq 0 ]; then
        for w in w1_fib w1_loop w1_micrograd; do
            k=$(cd ../.. && cg_count "$KILN" "benches/$w.dl")
            printf '%-16s %14s %14s %9s %9s\n' "$w" - "$k" - -
        done
    fi
    exit 0
fi
: > "$TMP/ratios"

echo "# w11 benchmarks: $(nproc) cores, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# python: $($PY --version 2>&1) ($(command -v "$PY"))"
if [ -n "$KILN" ]; then
    echo "# kiln:   $KILN"
else
    echo "# kiln:   (KILN unset: CPython only)"
fi
echo "# median of $RUNS wall times per program, whole process"
printf '%-16s %9s %9s %9s  %s\n' program python_s kiln_s kiln/py note

# bench_one NAME: prints one table row; appends "NAME RATIO" to $TMP/ratios
# when Kiln ran and matched; exit status 1 if CPython failed.
bench_one() {
    "$PY" - "$1" "$RUNS" "$PY" "$KILN" "$TMP/ratios" <<'EOF'
import statistics
import subprocess
import sys
import time

name, runs, py, kiln, ratio_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
script = name + ".py"


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return time.perf_counter() - t0, p.returncode, p.stdout, p.stderr


def first_error_line(err, out):
    lines = [l.strip() for l in err.decode("utf-8", "replace").splitlines() if l.strip()]
    if not lines:
        lines = [l.strip() for l in out.decode("utf-8", "replace").splitlines() if l.strip()]
    for l in lines:
        if "Error" in l or "error" in l:
            return l
    return lines[0] if lines else "(no output)"


def first_diff(a, b):
    la = a.decode("utf-8", "replace").splitlines()
    lb = b.decode("utf-8", "replace").splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<missing>"
        y = lb[i] if i < len(lb) else "<missing>"
        if x != y:
            return "line %d: python %r vs kiln %r" % (i + 1, x[:60], y[:60])
    return "(identical lines, different bytes)"


py_times, kiln_times = [], []
py_out = None
note = ""
kiln_ok = bool(kiln)
for i in range(runs):
    t, rc, out, err = run([py, script])
    if rc != 0:
        print("%-16s %9s %9s %9s  CPython FAILED: %s" % (name, "-", "-", "-", first_error_line(err, out)))
        sys.exit(1)
    if py_out is None:
        py_out = out
    elif out != py_out:
        print("%-16s %9s %9s %9s  CPython output not deterministic" % (name, "-", "-", "-"))
        sys.exit(1)
    py_times.append(t)
    if kiln_ok:
        t, rc, out, err = run([kiln, script])
        if rc != 0:
            note = "KILN FAILED (rc=%d): %s" % (rc, first_error_line(err, out))
            kiln_ok = False
        elif out != py_out:
            note = "KILN MISMATCH: " + first_diff(py_out, out)
            kiln_ok = False
        else:
            kiln_times.append(t)

pm = statistics.median(py_times)
if kiln_ok:
    km = statistics.median(kiln_times)
    ratio = km / pm
    print("%-16s %9.3f %9.3f %8.2fx  %s" % (name, pm, km, ratio, note))
    with open(ratio_file, "a") as f:
        f.write("%s %.6f\n" % (name, ratio))
else:
    print("%-16s %9.3f %9s %9s  %s" % (name, pm, "-", "-", note))
EOF
}

status=0
for name in $PROGRAMS; do
    bench_one "$name" || status=1
done

if [ -n "$KILN" ]; then
    "$PY" - "$TMP/ratios" "$(echo $PROGRAMS | wc -w)" <<'EOF'
import math
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
total = int(sys.argv[2])
if rows:
    g = math.exp(sum(math.log(float(r[1])) for r in rows) / len(rows))
    print("geomean kiln/python over %d of %d programs: %.2fx" % (len(rows), total, g))
else:
    print("geomean kiln/python: n/a (Kiln ran none of the %d programs)" % total)
EOF
fi
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
