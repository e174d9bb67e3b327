#!/usr/bin/env python3
"""Writes the monitor cannot see still never reach the host directory under a mount point
(issue 15, items 5, 7 and 8, through the cover of monitor/mount_cover.h): programs/coverprobe
chroots to the mount point's parent and creates a file through the mount point's name (served
in the mount since the monitor maps paths after a chroot: chroot_test.py), binds
the mount point elsewhere in a mount namespace of its own and creates a file there, and dumps
core with its cwd in the mount. Under amino run as root, on every backend, the host directory
must stay empty (the writes fail with EROFS on the read-only cover).
Negative control: natively each probe writes into the directory."""

import os
import sys

import hardening_common as hc


def probes(parent, name, other):
    mp = os.path.join(parent, name)
    return [("chroot", ["chroot", parent, name]), ("bind", ["bind", mp, other]),
            ("core", ["core", mp])]


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the probes chroot and mount: run this test as root")
    probe = hc.prog("coverprobe")
    native = os.path.join(scratch, "native")
    other = os.path.join(scratch, "other")
    os.makedirs(os.path.join(native, "m"))
    os.mkdir(other)
    for what, args in probes(native, "m", other):
        _, out, _ = hc.run([probe] + args, "coverprobe %s natively" % what)
        hc.check(out.strip() in ("%s=OK" % what, "core=dumped"),
                 "negative control: natively the %s probe did not write: %s" % (what, out))
    left = sorted(os.listdir(os.path.join(native, "m")))
    hc.check("f" in left and any(n.startswith("core") for n in left),
             "negative control: natively the directory holds %r" % left)
    hc.say("natively: every probe wrote into the directory (%s)" % ", ".join(left))
    db = os.path.join(scratch, "db")
    hc.run([hc.AMINO, "mkfs", db], "mkfs")
    for backend in hc.BACKENDS:
        parent = os.path.join(scratch, "p-" + backend)
        mp = os.path.join(parent, "m")
        os.makedirs(mp)
        results = []
        for what, args in probes(parent, "m", other):
            _, out, _ = hc.run(hc.amino_run(backend, [probe] + args, mounts=[(mp, db)]),
                               "coverprobe %s on %s" % (what, backend))
            results.append(out.strip())
            left = os.listdir(mp)
            hc.check(left == [], "%s: %s put %r in the host directory under the mount point" % (
                backend, what, left))
        hc.say("%s: %s; the host directory is empty" % (backend, " ".join(results)))


if __name__ == "__main__":
    sys.exit(hc.main(body))
