"""What the drivers of the per-call micro benchmarks (bench/syscall/run, bench/served/run) share:
running one kind of a benchmark program and parsing its "<kind> <median> <min> <max>" line, the
table cells, the machine line and the output files.
"""

import csv
import os
import platform
import subprocess
import sys


def list_kinds(bench):
    """[(kind, what one operation is)] from `bench --list`."""
    out = subprocess.run([bench, "--list"], check=True, capture_output=True, text=True).stdout
    return [tuple(line.split("\t", 1)) for line in out.splitlines() if line]


def run_kind(cmd, kind, timeout, env=None):
    """Runs cmd (a benchmark program given one --kind) and returns (ns, min, max, status, stderr);
    ns is None and status says why ("n/a (...)") when it failed."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError as e:
        return None, None, None, "n/a (%s not found)" % e.filename, ""
    except subprocess.TimeoutExpired:
        return None, None, None, "n/a (timeout after %gs)" % timeout, ""
    for line in r.stdout.splitlines():
        words = line.split()
        if len(words) == 4 and words[0] == kind and r.returncode == 0:
            return float(words[1]), float(words[2]), float(words[3]), "ok", r.stderr
    # subprocess reports death by signal N as -N.
    why = ("exit status %d" % r.returncode if r.returncode >= 0 else
           "killed by signal %d" % -r.returncode)
    sys.stderr.write("%s: %s\n%s" % (" ".join(cmd), why, r.stderr[-2000:]))
    return None, None, None, "n/a (%s)" % why, r.stderr


def cell(ns, native, status):
    """A table cell: "1,234 (5.6x)", "1,234" without a native figure, or the failure."""
    if ns is None:
        return status
    if native is None or native <= 0:
        return "{:,.0f}".format(ns)
    return "{:,.0f} ({:.1f}x)".format(ns, ns / native)


def machine_line(pin, detail):
    """Kernel, CPU, CPU count and pinning, then `detail` (what was run)."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "Linux %s, %s, %d CPUs; %s, pinned: %s" % (
        platform.release(), cpu, os.cpu_count(), detail, "taskset -c " + pin if pin else "no")


def write_outputs(out, name, table, header, rows):
    """Writes OUT/NAME.md (the table) and OUT/NAME.csv (header, then rows)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(table)
    with open(os.path.join(out, name + ".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
