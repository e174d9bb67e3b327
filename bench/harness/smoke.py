#!/usr/bin/env python3
"""Smoke test of bench/run: a `--scale smoke` run must finish, every configuration that can run
here must produce a positive result for every phase of every workload, the ones that cannot must
say why, the file systems must really have been ext3 (VANSYNC's mounted sync), the CSV files,
the report and a PNG per phase must exist, and nothing may be left mounted or attached. A second,
interrupted run (SIGTERM in the middle of a phase) must clean up as well. Speed is never checked.

  smoke.py --run bench/run --amino AMINO --programs DIR --out DIR
"""

import argparse
import csv
import os
import shutil
import signal
import subprocess
import sys
import time

# Configurations that need nothing but the amino binary and strace: they must run here. The
# rows for the seccomp and ptrace backends must run too, unless one is what the default picks
# (then they are "n/a" with that reason).
MUST_RUN = ["VANILLA", "VANSYNC", "STRACE", "AMINOTRACE", "AMINONULL"]
MUST_RUN_OR_NA = ["AMINOTRACE+seccomp", "AMINOTRACE+ptrace", "AMINONULL+seccomp",
                  "AMINONULL+ptrace"]
WORKLOADS = {"postmark": ["transactions"], "pmgen": ["transactions"],
             "meta": ["create", "stat", "readdir", "unlink"],
             "data": ["seqread", "randread", "seqwrite", "randwrite"],
             "build": ["unpack", "configure", "build"], "mail": ["deliver"],
             "tools": ["cp-a", "find", "du", "diff-r", "md5sum", "tar-c", "tar-x", "git-commit",
                       "git-status", "git-log-stat"],
             "exercisers": ["sysbench-rndrw", "sysbench-seqrd", "sysbench-mmap",
                            "sysbench-seqwr", "dbench"]}


def leftovers(path):
    """Mounts below `path` and loop devices whose backing file is below it."""
    path = os.path.realpath(path)
    found = []
    with open("/proc/mounts") as f:
        for line in f:
            mp = line.split()[1]
            if mp == path or mp.startswith(path + "/"):
                found.append("mounted: " + line.strip())
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    found += ["attached: " + l for l in loops.splitlines() if path in l]
    return found


def check_full_run(out, failures):
    for name in ("results.csv", "summary.csv", "report.md"):
        if not os.path.getsize(os.path.join(out, name)) > 0:
            failures.append("%s is empty" % name)
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    report = open(os.path.join(out, "report.md")).read()
    configs = sorted({r["config"] for r in rows})
    for c in MUST_RUN + MUST_RUN_OR_NA:
        if c not in configs:
            failures.append("no results for %s" % c)
    for c in configs:
        mine = [r for r in rows if r["config"] == c]
        skipped = [r for r in mine if r["status"].startswith(("unavailable:", "n/a:"))]
        if c in MUST_RUN and skipped:
            failures.append("%s must run here but: %s" % (c, skipped[0]["status"]))
        if c in MUST_RUN_OR_NA and any(r["status"].startswith("unavailable") for r in skipped):
            failures.append("%s must run here but: %s" % (c, skipped[0]["status"]))
        for r in skipped:
            if len(r["status"].split(":", 1)[1].strip()) < 5:
                failures.append("%s/%s/%s gives no reason: %r" % (
                    c, r["workload"], r["phase"], r["status"]))
            if r["status"] not in report:
                failures.append("the report does not show %s: %s" % (c, r["status"]))
        measured = [r for r in mine if r not in skipped]
        for w, phases in WORKLOADS.items():
            for ph in phases:
                cell = [r for r in mine if r["workload"] == w and r["phase"] == ph]
                if not cell:
                    failures.append("%s: no row for %s/%s" % (c, w, ph))
                    continue
                for r in cell:
                    if r in skipped:
                        continue
                    if r["status"] != "ok" or not float(r["value"] or 0) > 0:
                        failures.append("%s %s/%s: %s value=%r" % (c, w, ph, r["status"],
                                                                     r["value"]))
                    on_ext3 = c in ("VANILLA", "VANSYNC", "STRACE") or c.startswith(
                        ("AMINOTRACE", "AMINONULL"))
                    if on_ext3 and not r["fs"].startswith("ext3 "):
                        failures.append("%s %s/%s ran on %r, not ext3" % (c, w, ph, r["fs"]))
                    opts = r["fs"].split(" ", 1)[-1].split(",")
                    if c == "VANSYNC" and "sync" not in opts:
                        failures.append("VANSYNC %s/%s was mounted %r" % (w, ph, r["fs"]))
                    if c == "VANILLA" and "sync" in opts:
                        failures.append("VANILLA %s/%s was mounted %r" % (w, ph, r["fs"]))
                    if c.startswith("AMINO") and not r["monitor_busy"]:
                        failures.append("%s %s/%s: no monitor time from --stats" % (c, w, ph))
                    if c.startswith("AMINO") and not r["monitor_peak_kib"]:
                        failures.append("%s %s/%s: no monitor memory from --stats" % (c, w, ph))
        if not measured and c in MUST_RUN:
            failures.append("%s measured nothing" % c)
    for w, phases in WORKLOADS.items():
        for ph in phases:
            png = os.path.join(out, "plots", "%s-%s.png" % (w, ph))
            if not os.path.exists(png):
                failures.append("missing %s" % png)
                continue
            with open(png, "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    failures.append("%s is not a PNG" % png)
            if "plots/%s-%s.png" % (w, ph) not in report:
                failures.append("the report does not show %s" % png)
    if "| Write cache |" not in report or "| CPU |" not in report:
        failures.append("the report lacks the machine description")


def interrupted_run(args, out, failures):
    """SIGTERM while a phase runs: exit 130, partial results written, nothing left behind."""
    cmd = [sys.executable, args.run, "--scale", "smoke", "--configs", "VANILLA,AMINOTRACE",
           "--workloads", "data", "--out", out, "--amino", args.amino, "--programs",
           args.programs]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "] rep 1" in line:  # the first phase finished; the next one is starting
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.communicate(timeout=120)[0]
    sys.stdout.write("".join(seen) + rest)
    if proc.returncode != 130:
        failures.append("interrupted run exited %s, not 130" % proc.returncode)
    if not os.path.exists(os.path.join(out, "report.md")):
        failures.append("interrupted run wrote no report")
    failures += ["after SIGTERM, " + x for x in leftovers(out)]


def main():
    p = argparse.ArgumentParser()
    for a in ("--run", "--amino", "--programs", "--out"):
        p.add_argument(a, required=True)
    args = p.parse_args()
    if os.geteuid() != 0:
        print("bench.harness_smoke needs root (loop devices, mounts, drop_caches)")
        return 1
    shutil.rmtree(args.out, ignore_errors=True)
    failures = []
    start = time.monotonic()
    full = os.path.join(args.out, "full")
    r = subprocess.run([sys.executable, args.run, "--scale", "smoke", "--out", full, "--amino",
                        args.amino, "--programs", args.programs])
    took = time.monotonic() - start
    print("smoke run: exit %d in %.0f s" % (r.returncode, took))
    if r.returncode != 0:
        failures.append("bench/run --scale smoke exited %d" % r.returncode)
    if os.path.exists(os.path.join(full, "results.csv")):
        check_full_run(full, failures)
    else:
        failures.append("no results.csv")
    failures += leftovers(args.out)
    interrupted_run(args, os.path.join(args.out, "interrupted"), failures)
    for f in failures:
        print("FAIL: " + f)
    print("smoke: %s" % ("FAILED" if failures else "every check passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
