#!/usr/bin/env python3
"""Smoke test of bench/profiles/run: a quick run (scratch on /dev/shm) exits 0 and its table
has a number of ns in every cell and, under the profile, exactly one call and one return
caught per call of work(). Speed is never checked.

  smoke.py RUN AMINO FUNCALL_BENCH
"""

import os
import re
import subprocess
import sys


def main():
    run, amino, bench = sys.argv[1:4]
    scratch = ["--scratch", "/dev/shm"] if os.path.isdir("/dev/shm") else []
    r = subprocess.run([sys.executable, run, "--quick", "--repeat", "1", "--amino", amino,
                        "--bench", bench] + scratch, capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode != 0:
        print("run exited with %d" % r.returncode)
        return 1
    failures = []
    for kind, n in (("empty", 2000), ("write", 200)):
        row = next((l for l in r.stdout.splitlines() if l.startswith("| %s |" % kind)), None)
        if row is None:
            failures.append("no row for %s" % kind)
            continue
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) != 7 or not all(re.fullmatch(r"\d+ ns", c) for c in cells[2:5]):
            failures.append("%s: a cell without ns: %r" % (kind, cells))
        elif cells[6] != "%d calls, %d returns" % (n, n):
            failures.append("%s: expected %d calls and returns caught, got %r" % (
                kind, n, cells[6]))
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
