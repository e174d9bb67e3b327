#!/usr/bin/env python3
"""Smoke test of bench/syscall/run: a quick run exits 0, its Markdown table has a row for every
call kind and a column for every configuration, and the CSV has a positive ns per call in every
cell (a configuration that broke a call shows "n/a" and fails this test). Speed is never checked.

  smoke.py RUN AMINO SYSCALL_BENCH OUTDIR
"""

import csv
import os
import subprocess
import sys

CONFIGS = ["native", "notify", "seccomp", "ptrace", "notify emulate=host", "seccomp emulate=host",
           "ptrace emulate=host", "strace -f"]


def main():
    run, amino, bench, out = sys.argv[1:5]
    r = subprocess.run([sys.executable, run, "--quick", "--out", out, "--amino", amino,
                        "--bench", bench], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        print("run exited with %d" % r.returncode)
        return 1
    kinds = [l.split("\t")[0] for l in subprocess.run(
        [bench, "--list"], check=True, capture_output=True, text=True).stdout.splitlines()]
    failures = []
    header = next((l for l in r.stdout.splitlines() if l.startswith("| call |")), "")
    for c in CONFIGS:
        if "| %s |" % c not in header:
            failures.append("missing column: %s" % c)
    for k in kinds:
        if not any(l.startswith("| %s |" % k) for l in r.stdout.splitlines()):
            failures.append("missing row: %s" % k)
    with open(os.path.join(out, "syscall.csv")) as f:
        cells = {(row["config"], row["call"]): row for row in csv.DictReader(f)}
    for c in CONFIGS:
        for k in kinds:
            row = cells.get((c, k))
            if row is None:
                failures.append("no CSV cell for %s / %s" % (c, k))
            elif row["status"] != "ok" or not float(row["ns_median"] or 0) > 0:
                failures.append("%s / %s: %s %s" % (c, k, row["status"], row["ns_median"]))
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
