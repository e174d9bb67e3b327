#!/usr/bin/env python3
"""Writes the monitor cannot see still never reach the host directory under a mount point
(issue 15, items 5, 7 and 8, through the cover of monitor/mount_cover.h): programs/coverprobe
chroots to the mount point's parent and creates a file through the mount point's name (served
in the mount since the monitor maps paths after a chroot: chroot_test.py), binds
the mount point elsewhere in a mount namespace of its own and creates a file there, and dumps
core with its cwd in the mount. Under amino run as root, on every backend, the host directory
must stay empty (the writes fail with EROFS on the read-only cover).
Negative control: natively each probe writes into the directory.

Without CAP_SYS_ADMIN there is no cover; the host directory is read-only for the run instead
(monitor/host_dir_guard.h). As 65534, on every backend: the core dump with the cwd in the mount
is not written, the directory has no write bit while a run uses it, and its mode comes back when
the last run ends, also when the command dies of a signal and after a run whose monitor was
killed. Negative control: natively, as
65534, the core is written into the directory."""

import os
import signal
import subprocess
import sys
import time

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
    unprivileged(scratch, probe)


def mode_of(path):
    return os.stat(path).st_mode & 0o7777


def unprivileged(scratch, probe):
    base = os.path.join(scratch, "u")
    os.mkdir(base)
    os.chown(base, hc.NOBODY, hc.NOBODY)
    native = os.path.join(base, "native")
    os.mkdir(native)
    os.chown(native, hc.NOBODY, hc.NOBODY)
    _, out, _ = hc.run(hc.as_nobody([probe, "core", native]), "coverprobe core natively as 65534")
    left = os.listdir(native)
    hc.check(out.strip() == "core=dumped" and any(n.startswith("core") for n in left),
             "negative control: natively as 65534 no core in the directory: %s %r" % (out, left))
    db = os.path.join(base, "db")
    hc.run(hc.as_nobody([hc.AMINO, "mkfs", db]), "mkfs as 65534")
    for backend in hc.BACKENDS:
        mp = os.path.join(base, "m-" + backend)
        os.mkdir(mp, 0o750)
        os.chown(mp, hc.NOBODY, hc.NOBODY)
        os.chmod(mp, 0o750)
        _, out, _ = hc.run(hc.as_nobody(hc.amino_run(backend, [probe, "core", mp],
                                                     mounts=[(mp, db)])),
                           "coverprobe core as 65534 on %s" % backend)
        hc.check(out.strip() == "core=none" and os.listdir(mp) == [],
                 "%s: as 65534 the core reached the host directory: %r %r" % (
                     backend, out, os.listdir(mp)))
        hc.check(mode_of(mp) == 0o750, "%s: the run left the host directory's mode %o" % (
            backend, mode_of(mp)))
        hc.say("%s as 65534: %s, the mode given back" % (backend, out.strip()))
    # A command that dies of a signal: amino run dies the same way, after giving the mode back.
    mp = os.path.join(base, "m-" + hc.BACKENDS[0])
    status, _, _ = hc.run(hc.as_nobody(hc.amino_run(hc.BACKENDS[0], ["sh", "-c", "kill -TERM $$"],
                                                    mounts=[(mp, db)])),
                          "a command killed by SIGTERM", check=False)
    hc.check(status == -signal.SIGTERM and mode_of(mp) == 0o750,
             "after a command killed by SIGTERM: status %d, mode %o" % (status, mode_of(mp)))
    # While a run goes on the directory has no write bit. A run whose monitor dies leaves it so;
    # the next run to end gives the mode back.
    mp = os.path.join(base, "m-" + hc.BACKENDS[0])
    proc = subprocess.Popen(hc.as_nobody(hc.amino_run(hc.BACKENDS[0], ["sleep", "30"],
                                                      mounts=[(mp, db)])),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 10
    while mode_of(mp) != 0o550 and time.monotonic() < deadline:
        time.sleep(0.05)
    hc.check(mode_of(mp) == 0o550, "the run did not make the directory read-only")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    hc.check(mode_of(mp) == 0o550, "after SIGKILL the mode is %o" % mode_of(mp))
    hc.run(hc.as_nobody(hc.amino_run(hc.BACKENDS[0], ["true"], mounts=[(mp, db)])), "next run")
    hc.check(mode_of(mp) == 0o750, "the next run left the mode %o" % mode_of(mp))
    hc.say("a killed run's read-only mode is given back by the next run")


if __name__ == "__main__":
    sys.exit(hc.main(body))
