#!/usr/bin/env python3
"""Renames that would carry a mount point's host directory away from the mount, or leave the
monitor a stale picture of a cwd (issue 15, item 6), with a mount at P/home/u/m:
  moved    a shell renames P/home/u (by an absolute path, and by a relative one from inside
           it), then the mount point itself, and writes through the new names: each rename
           fails with EBUSY ("Device or resource busy"), nothing moved, and the writes do not
           reach the host directory under the mount point. A rename of an unrelated directory
           beside the mount point still works, and a file in the mount is reached as before.
  stale    a shell whose cwd is P/t/a/b (looked at once, so the monitor knows it) lets mv move
           P/t/a to P/home/u/a, then writes ../../m/moved: that is in the mount now, so the
           file is served (read back through the mount) and the host directory stays empty.
Under amino run, as root and as uid 65534 (who has no cover over the host directory), on every
backend. Negative control: natively, the renames succeed and the write lands in the moved
directory."""

import os
import sys

import hardening_common as hc

SCRIPT = (
    "cd {p} && mv {p}/home/u {p}/home/v; echo abs=$?; "
    "(cd home/u && mv ../u ../w); echo rel=$?; "
    "mv home/u/m home/u/m2; echo point=$?; "
    "for d in v w; do [ -d home/$d/m ] && echo x > home/$d/m/escaped; done; "
    "[ -d home/u/m2 ] && echo x > home/u/m2/escaped; "
    "mkdir home/u/other && mv home/u/other home/u/other2; echo other=$?; "
    "echo kept > home/u/m/f && cat home/u/m/f")

STALE = ("cd {p}/t/a/b && [ -e ./nothing ]; mv {p}/t/a {p}/home/u/a && echo x > ../../m/moved; "
         "echo stale=$?; cat {p}/home/u/m/moved")


def layout(parent, owner):
    mp = os.path.join(parent, "home", "u", "m")
    os.makedirs(mp)
    os.makedirs(os.path.join(parent, "t", "a", "b"))
    for base, dirs, _ in os.walk(parent):
        os.chown(base, owner, owner)
    return mp


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the test runs the shell as root and as 65534: run it as root")
    native = os.path.join(scratch, "native")
    layout(native, 0)
    _, out, _ = hc.run(["sh", "-c", SCRIPT.format(p=native)], "the renames natively",
                       check=False)
    hc.check("abs=0" in out and os.path.exists(os.path.join(native, "home", "v", "m", "escaped")),
             "negative control: natively the rename or the write through it failed: %r" % out)
    hc.say("natively: %s" % " ".join(out.split()))
    native2 = os.path.join(scratch, "native2")
    layout(native2, 0)
    _, out, _ = hc.run(["sh", "-c", STALE.format(p=native2)], "the moved cwd natively")
    hc.check(out.split() == ["stale=0", "x"], "natively the write from the moved cwd: %r" % out)
    for who, wrap, owner in (("root", list, 0), ("uid 65534", hc.as_nobody, hc.NOBODY)):
        db = os.path.join(hc.HOME[0] if owner else scratch, "db")
        hc.run(wrap([hc.AMINO, "mkfs", db]), "amino mkfs as %s" % who)
        for backend in hc.BACKENDS:
            parent = os.path.join(scratch, "%s-%d" % (backend, owner))
            mp = layout(parent, owner)
            rc, out, err = hc.run(wrap(hc.amino_run(backend, ["sh", "-c", SCRIPT.format(
                p=parent)], mounts=[(mp, db)])), "the renames as %s on %s" % (who, backend),
                check=False)
            words = out.split()
            hc.check(rc == 0 and words == ["abs=1", "rel=1", "point=1", "other=0", "kept"],
                     "%s, %s: the shell printed %r (status %d)\n%s" % (who, backend, words, rc,
                                                                       err))
            hc.check(err.count("Device or resource busy") == 3,
                     "%s, %s: the renames did not fail with EBUSY:\n%s" % (who, backend, err))
            hc.check(os.listdir(mp) == [], "%s, %s: the host directory under the mount point "
                     "holds %r" % (who, backend, os.listdir(mp)))
            moved = [d for d in ("v", "w") if os.path.exists(os.path.join(parent, "home", d))]
            moved += ["u/m2"] if os.path.exists(os.path.join(parent, "home", "u", "m2")) else []
            hc.check(not moved, "%s, %s: moved %r" % (who, backend, moved))
            rc, out, err = hc.run(wrap(hc.amino_run(backend, ["sh", "-c", STALE.format(
                p=parent)], mounts=[(mp, db)])), "a write from a moved cwd as %s on %s" % (
                    who, backend), check=False)
            hc.check(rc == 0 and out.split() == ["stale=0", "x"] and os.listdir(mp) == [],
                     "%s, %s: the write from the moved cwd printed %r (status %d), the host "
                     "directory holds %r\n%s" % (who, backend, out.split(), rc, os.listdir(mp),
                                                  err))
            hc.say("%s, %s: the renames failed with EBUSY; the write from a moved cwd was "
                   "served; the host directory is empty" % (who, backend))


if __name__ == "__main__":
    sys.exit(hc.main(body))
