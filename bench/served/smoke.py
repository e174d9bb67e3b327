#!/usr/bin/env python3
"""Smoke test of bench/served/run: a quick run with its scratch directory on /dev/shm exits 0,
its Markdown table has a row for every kind, start-up and monitor time per stop, and a column for
every configuration, and the CSV has a positive ns per operation in every cell (a configuration
that broke a call shows "n/a" and fails this test) and monitor time and stops for every traced
run. Speed is never checked.

  smoke.py RUN AMINO SERVED_BENCH OUTDIR
"""

import csv
import os
import subprocess
import sys

CONFIGS = ["native", "AMINOTRACE", "AMINONULL", "AMINOACI", "AMINOACI seccomp", "AMINOACID"]


def main():
    run, amino, bench, out = sys.argv[1:5]
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None
    r = subprocess.run([sys.executable, run, "--quick", "--out", out, "--amino", amino,
                        "--bench", bench] + (["--scratch", scratch] if scratch else []),
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        print("run exited with %d" % r.returncode)
        return 1
    kinds = [l.split("\t")[0] for l in subprocess.run(
        [bench, "--list"], check=True, capture_output=True, text=True).stdout.splitlines()]
    failures = []
    lines = r.stdout.splitlines()
    header = next((l for l in lines if l.startswith("| kind | one operation |")), "")
    for c in CONFIGS:
        if "| %s |" % c not in header:
            failures.append("missing column: %s" % c)
    for k in kinds + ["start-up", "monitor µs/stop"]:
        if not any(l.startswith("| %s |" % k) for l in lines):
            failures.append("missing row: %s" % k)
    with open(os.path.join(out, "served.csv")) as f:
        cells = {(row["config"], row["kind"]): row for row in csv.DictReader(f)}
    for c in CONFIGS:
        for k in kinds + ["start-up"]:
            row = cells.get((c, k))
            if row is None:
                failures.append("no CSV cell for %s / %s" % (c, k))
            elif row["status"] != "ok" or not float(row["ns_median"] or 0) > 0:
                failures.append("%s / %s: %s %s" % (c, k, row["status"], row["ns_median"]))
            elif c != "native" and k != "start-up" and not (
                    int(row["stops"] or 0) > 0 and float(row["monitor_ms"] or 0) > 0):
                failures.append("%s / %s: no --stats figures" % (c, k))
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
