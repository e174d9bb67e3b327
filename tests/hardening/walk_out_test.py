#!/usr/bin/env python3
"""Paths that walk out of a mount by ".." from a directory inside it reach the host path they
name, on every backend: with a mount at P/m and the cwd at P/m/a/b, a shell makes, stats,
links, renames, changes and lists ../../../out, which is P/out on the host. A notified call has
no registers to change, so the monitor performs these calls itself on the host path; it did
so, too, for a host path under /dev (P in /dev/shm), where it had let the kernel run the call
as made, from the mount point's host directory, where ../../../out is another place.
Checked with P in the usual scratch directory and in /dev/shm: the shell prints what it
prints natively, P/out holds what the shell made there, and the host directory under the
mount point stays empty. Negative control: natively, the same script from P/m/a/b gives the
expected output and P/out."""

import os
import shutil
import sys
import tempfile

import hardening_common as hc

SCRIPT = ("mkdir -p {mp}/a/b && cd {mp}/a/b && mkdir ../../../out && stat -c %F ../../../out && "
          "echo x > ../../../out/f && ln -s f ../../../out/l && mv ../../../out/f ../../../out/g && "
          "chmod 600 ../../../out/g && stat -c '%a %s' ../../../out/g && readlink ../../../out/l && "
          "ls ../../../out && rm ../../../out/l && ls ../../../out")


def expected_tree(parent):
    out = os.path.join(parent, "out")
    if not os.path.isdir(out):
        return None
    return sorted((name, os.stat(os.path.join(out, name)).st_mode & 0o777)
                  for name in os.listdir(out))


def walk_out(parents):
    native = os.path.join(parents[0], "native")
    os.makedirs(os.path.join(native, "m"))
    _, want, _ = hc.run(["sh", "-c", SCRIPT.format(mp=os.path.join(native, "m"))],
                        "the walks natively")
    want_tree = expected_tree(native)
    hc.check(want.split()[:3] == ["directory", "600", "2"] and want_tree == [("g", 0o600)],
             "negative control: natively the script printed %r and made %r" % (want, want_tree))
    hc.say("natively: %s" % " ".join(want.split()))
    for where in parents:
        db = os.path.join(where, "db")
        hc.run([hc.AMINO, "mkfs", db], "amino mkfs in %s" % where)
        for backend in hc.BACKENDS:
            parent = os.path.join(where, backend)
            mp = os.path.join(parent, "m")
            os.makedirs(mp)
            rc, out, err = hc.run(hc.amino_run(backend, ["sh", "-c", SCRIPT.format(mp=mp)],
                                               mounts=[(mp, db)]),
                                  "the walks on %s in %s" % (backend, where), check=False)
            tree = expected_tree(parent)
            hc.check(rc == 0 and out == want and tree == want_tree,
                     "%s, %s: the shell printed %r (status %d) and made %r; natively %r and %r"
                     "\n%s" % (where, backend, out.split(), rc, tree, want.split(), want_tree,
                               err))
            hc.check(os.listdir(mp) == [], "%s, %s: the host directory under the mount point "
                     "holds %r" % (where, backend, os.listdir(mp)))
            hc.say("%s, %s: the walks out reached %s/out" % (where, backend, parent))


def body(scratch):
    # /dev/shm: the prefix the host emulation leaves to the kernel.
    shm = tempfile.mkdtemp(prefix="amino-walk-out-", dir="/dev/shm")
    try:
        walk_out([scratch, shm])
    finally:
        shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(hc.main(body))
