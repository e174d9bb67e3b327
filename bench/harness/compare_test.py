#!/usr/bin/env python3
"""bench/compare-runs on two small runs written here: each shared row gives both runs' ratios and
their quotient, VANILLA and rows of only one run are left out, a configuration not measured in
one run shows "—", --configs narrows the table, and a missing or malformed summary.csv is an
error (status 2) that names the file."""

import os
import subprocess
import sys
import tempfile

COMPARE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compare-runs")
HEAD = ("workload,phase,config,status,runs,metric,unit,mean,ci95,ratio_to_vanilla,paper_ratio,"
        "paper_relative_to,user,system,monitor_user,monitor_system,monitor_busy\n")


def summary(d, rows):
    os.makedirs(d)
    with open(os.path.join(d, "summary.csv"), "w") as f:
        f.write(HEAD)
        for w, c, status, ratio in rows:
            f.write("%s,transactions,%s,%s,2,rate,tps,100,1,%s,1,VANILLA,0,0,0,0,\n"
                    % (w, c, status, ratio))


def run(*args):
    p = subprocess.run([sys.executable, COMPARE] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as t:
        a, b = os.path.join(t, "before"), os.path.join(t, "after")
        summary(a, [("pmgen", "VANILLA", "ok", 1), ("pmgen", "AMINOACI", "ok", 0.1),
                    ("pmgen", "AMINOACID", "ok", 0.02), ("pmgen", "AMINOXSYNC", "n/a: x", ""),
                    ("meta", "AMINOACI", "ok", 0.5)])
        summary(b, [("pmgen", "VANILLA", "ok", 1), ("pmgen", "AMINOACI", "ok", 0.25),
                    ("pmgen", "AMINOACID", "ok", 0.01), ("pmgen", "AMINOXSYNC", "ok", 0.2),
                    ("postmark", "AMINOACI", "ok", 0.3)])
        rc, out, err = run(a, b)
        check(rc == 0, "status %d: %s" % (rc, err))
        check("| pmgen | transactions | AMINOACI | 0.1 | 0.25 | 2.50x |" in out, "AMINOACI row:\n" + out)
        check("| pmgen | transactions | AMINOACID | 0.02 | 0.01 | 0.50x |" in out, "AMINOACID row")
        check("| pmgen | transactions | AMINOXSYNC | — | 0.2 | — |" in out, "n/a row:\n" + out)
        check("VANILLA |" not in out, "VANILLA listed")
        check("meta" not in out and "postmark" not in out, "a row of one run only listed")
        rc, out, _ = run(a, b, "--configs", "AMINOACID")
        check(rc == 0 and "AMINOACID" in out and "| AMINOACI |" not in out, "--configs:\n" + out)
        rc, out, err = run(os.path.join(t, "none"), b)
        check(rc == 2 and "none/summary.csv" in err, "missing run: %d %r" % (rc, err))
        os.makedirs(os.path.join(t, "bad"))
        with open(os.path.join(t, "bad", "summary.csv"), "w") as f:
            f.write("a,b\n1,2\n")
        rc, out, err = run(os.path.join(t, "bad"), b)
        check(rc == 2 and "not a bench/run summary" in err, "malformed run: %d %r" % (rc, err))
    for f in failures:
        print("FAIL: " + f)
    print("bench/compare-runs: %s" % ("FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
