#!/usr/bin/env python3
"""A path the monitor read is where the kernel writes (issue 15, item 2): programs/pathrace
appends through a path whose one byte another thread flips between a host directory ("h") and
a mount point ("m"). The monitor classifies the path it read; if the kernel read it again, a
call let through as a host call could land under the mount point. For a task whose memory
another task shares, the monitor gives the kernel the bytes it classified (path_pin.cc). On
every backend, as root (with the cover of monitor/mount_cover.h as defence in depth) and as
the unprivileged 65534 (no cover), the host directory under the mount point must stay empty,
and every append must land in h or in the mount (as root under notify, where the cover's
mount namespace leaves the call to the kernel, an append the flip redirected fails with EROFS).
Before the pinning, as 65534, 8 to 14% of 5,000 appends reached the host directory under the
mount point (as root they failed with EROFS on the cover).
Negative control: natively both directories receive appends, so the flips do reach the calls.
AMINO_PATH_RACE_OPENS (default 20000) sets the appends per run."""

import os
import sys

import hardening_common as hc

OPENS = int(os.environ.get("AMINO_PATH_RACE_OPENS", "20000"))


def parse(out):
    return {k: int(v) for k, v in (kv.split("=") for kv in out.split())}


def size(path):
    return os.path.getsize(path) if os.path.exists(path) else 0


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the test runs as root and as 65534: run it as root")
    probe = hc.prog("pathrace")
    for who, run_as in (("root", lambda argv: argv), ("65534", hc.as_nobody)):
        top = os.path.join(scratch, who)
        os.mkdir(top)
        if who != "root":
            os.chown(top, hc.NOBODY, hc.NOBODY)
        host, mp = os.path.join(top, "h"), os.path.join(top, "m")
        target = os.path.join(mp, "f")
        offset = len(top) + 1  # the byte that is "h" or "m"
        hc.run(run_as(["mkdir", host, mp]))
        if who == "root":
            _, out, _ = hc.run([probe, target, str(offset), "h", "m", str(OPENS)],
                               "pathrace natively")
            both = [size(os.path.join(d, "f")) for d in (host, mp)]
            hc.check(all(both), "negative control: natively the appends went to only one "
                     "directory (%r): the flips do not reach the calls" % both)
            hc.say("natively: %d appends in h, %d in m" % tuple(both))
            os.unlink(os.path.join(host, "f"))
            os.unlink(os.path.join(mp, "f"))
        for backend in hc.BACKENDS:
            db = os.path.join(top, "db-" + backend)
            hc.run(run_as([hc.AMINO, "mkfs", db]), "mkfs")
            _, out, _ = hc.run(run_as(hc.amino_run(backend, [probe, target, str(offset), "h",
                                                             "m", str(OPENS)],
                                                   mounts=[(mp, db)])),
                               "pathrace on %s as %s" % (backend, who), timeout=240)
            r = parse(out)
            left = os.listdir(mp)
            hc.check(left == [], "%s, %s: the host directory under the mount point got %r (%s)" %
                     (backend, who, left, out.strip()))
            # As root the notify backend leaves the call to the kernel in the cover's mount
            # namespace (the monitor's walk would be in its own): the cover refuses what the
            # flips redirect, EROFS. Elsewhere every append succeeds.
            refused = r["erofs"] if who == "root" and backend == "notify" else 0
            hc.check(r["ok"] + refused == OPENS, "%s, %s: appends failed: %s" % (
                backend, who, out.strip()))
            _, served, _ = hc.run(run_as(hc.amino_run(backend, ["stat", "-c", "%s", target],
                                                      mounts=[(mp, db)])),
                                  "stat of the mount's file on %s as %s" % (backend, who))
            in_h = size(os.path.join(host, "f"))
            hc.check(in_h + int(served) == r["ok"], "%s, %s: %d appends in h and %s in the mount, "
                     "of %d" % (backend, who, in_h, served.strip(), r["ok"]))
            hc.say("%s, %s: %s; %d in h, %s in the mount, none under the mount point" % (
                backend, who, out.strip(), in_h, served.strip()))
            os.unlink(os.path.join(host, "f"))


if __name__ == "__main__":
    sys.exit(hc.main(body))
