#!/usr/bin/env python3
"""A path the monitor read is not where the kernel writes (issue 15, item 2, and the defence in
depth it asks for): programs/pathrace appends through a path whose one byte another thread
flips between a host directory ("h") and a mount point ("m"). The monitor classifies the path it
read; the kernel reads it again, so a call let through as a host call may land under the mount
point. In the traced tree each host directory under a mount point is covered by an empty
read-only mount (monitor/mount_cover.h, as root): such an append fails with EROFS instead of
writing there. On every backend the host directory under the mount point must stay empty.
Before the cover, 1 to 6% of 20,000 appends reached it.
Negative control: natively both directories receive appends, so the flips do reach the calls.
AMINO_PATH_RACE_OPENS (default 20000) sets the appends per run."""

import os
import sys

import hardening_common as hc

OPENS = int(os.environ.get("AMINO_PATH_RACE_OPENS", "20000"))


def parse(out):
    return {k: int(v) for k, v in (kv.split("=") for kv in out.split())}


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the cover needs root (CAP_SYS_ADMIN); run this test as root")
    probe = hc.prog("pathrace")
    host, mp = os.path.join(scratch, "h"), os.path.join(scratch, "m")
    target = os.path.join(mp, "f")
    offset = len(scratch) + 1  # the byte that is "h" or "m"
    os.mkdir(host)
    os.mkdir(mp)
    _, out, _ = hc.run([probe, target, str(offset), "h", "m", str(OPENS)], "pathrace natively")
    both = [os.path.getsize(os.path.join(d, "f")) if os.path.exists(os.path.join(d, "f")) else 0
            for d in (host, mp)]
    hc.check(all(both), "negative control: natively the appends went to only one directory "
             "(%r): the flips do not reach the calls" % both)
    hc.say("natively: %d appends in h, %d in m" % tuple(both))
    os.unlink(os.path.join(host, "f"))
    os.unlink(os.path.join(mp, "f"))
    db = os.path.join(scratch, "db")
    hc.run([hc.AMINO, "mkfs", db], "mkfs")
    for backend in hc.BACKENDS:
        _, out, _ = hc.run(hc.amino_run(backend, [probe, target, str(offset), "h", "m",
                                                  str(OPENS)], mounts=[(mp, db)]),
                           "pathrace on %s" % backend, timeout=120)
        r = parse(out)
        left = os.listdir(mp)
        hc.check(left == [], "%s: the host directory under the mount point got %r (%s)" % (
            backend, left, out.strip()))
        hc.check(r["other"] == 0, "%s: appends failed other than with EROFS: %s" % (
            backend, out.strip()))
        hc.say("%s: %s; the host directory under the mount point is empty" % (
            backend, out.strip()))
        os.unlink(os.path.join(host, "f"))


if __name__ == "__main__":
    sys.exit(hc.main(body))
