#!/usr/bin/env python3
"""Time two commands side by side: run them alternately N times (the order swapped every
pair), each in a fresh empty directory `pairs-work/` under the current one, and print both
medians and the median of the pair-by-pair ratios B/A.

    python3 scripts/pairs.py 100 'target/release/examples/floor f.db' \
        'target/release/crashlab sender --db sender.db --contract R1 --amount 25 --message M1'

Run it from a directory on the file system you want to measure (tmpfs, a disk); give the
commands absolute paths or paths valid from `pairs-work/`."""
import os
import shutil
import statistics
import subprocess
import sys
import time

RUNS_MAX = 10_000


def run(cmd, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    start = time.perf_counter()
    done = subprocess.run(cmd, shell=True, cwd=work, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=60)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{cmd}: exit {done.returncode}: {done.stderr.decode()[:300]}")
    return elapsed


def main():
    if len(sys.argv) != 4 or not sys.argv[1].isdigit() or not 2 <= int(sys.argv[1]) <= RUNS_MAX:
        sys.exit(f"usage: pairs.py N(2..{RUNS_MAX}) 'command A' 'command B'")
    n, a, b = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    work = os.path.abspath("pairs-work")
    times_a, times_b, ratios = [], [], []
    for i in range(n):
        if i % 2 == 0:
            x, y = run(a, work), run(b, work)
        else:
            y, x = run(b, work), run(a, work)
        times_a.append(x)
        times_b.append(y)
        ratios.append(y / x)
    shutil.rmtree(work, ignore_errors=True)
    q = statistics.quantiles(ratios, n=4)
    print(f"A median {statistics.median(times_a) * 1000:.2f} ms, "
          f"B median {statistics.median(times_b) * 1000:.2f} ms, "
          f"B/A pair by pair: median {statistics.median(ratios):.2f} "
          f"(quartiles {q[0]:.2f} to {q[2]:.2f}), n={n}")


if __name__ == "__main__":
    main()
