#!/usr/bin/env python3
"""Paths that walk out of a mount by ".." from a directory inside it reach the host path they
name, on every backend: with a mount at P/m and the cwd at P/m/a/b, a shell makes, stats,
links, renames, changes and lists ../../../out, which is P/out on the host. A notified call has
no registers to change, so the monitor performs these calls itself on the host path; it did
so, too, for a host path under /dev (P in /dev/shm), where it had let the kernel run the call
as made, from the mount point's host directory, where ../../../out is another place.
Checked with P in the usual scratch directory and in /dev/shm: the shell prints what it
prints natively, P/out holds what the shell made there, and the host directory under the
mount point stays empty. Then a program opens with O_PATH, from P/m/a/b, ../../../out/g and
P/m/a/up/g, where P/m/a/up is a link to ../../out stored in the mount, with open and with
openat2: the descriptors name P/out/g (the listener cannot install an O_PATH descriptor, so
under notify such an open stops to be given the substitute path; it failed with EBADF). Negative control: natively, the same
script from P/m/a/b gives the expected output and P/out."""

import os
import shutil
import sys
import tempfile

import hardening_common as hc

SCRIPT = ("mkdir -p {mp}/a/b && cd {mp}/a/b && mkdir ../../../out && stat -c %F ../../../out && "
          "echo x > ../../../out/f && ln -s f ../../../out/l && mv ../../../out/f ../../../out/g && "
          "chmod 600 ../../../out/g && stat -c '%a %s' ../../../out/g && readlink ../../../out/l && "
          "ls ../../../out && rm ../../../out/l && ls ../../../out && ln -sfn ../../out ../up && "
          "python3 -c \"$OPATH\" ../../../out/g ../up/g ../../../out")

# Each path opened with O_PATH: the kind of file, the flags F_GETFL shows, and the descriptor's
# host path with the scratch directory written as P.
OPATH = r"""
import ctypes, os, stat, sys, fcntl
libc = ctypes.CDLL(None, use_errno=True)
def openat2(p, flags):  # x86-64 437; struct open_how {flags, mode, resolve}
    how = (ctypes.c_uint64 * 3)(flags, 0, 0)
    fd = libc.syscall(437, -100, p.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return fd
for p, opener in [(p, o) for p in sys.argv[1:] for o in (os.open, openat2)]:
    try:
        fd = opener(p, os.O_PATH)
        st = os.fstat(fd)
        name = os.readlink("/proc/self/fd/%d" % fd).replace(os.environ["P"], "P")
        print(stat.S_IFMT(st.st_mode) >> 12, fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_PATH != 0, name)
        os.close(fd)
    except OSError as e:
        print(p, "fails with", e.strerror)
"""


def expected_tree(parent):
    out = os.path.join(parent, "out")
    if not os.path.isdir(out):
        return None
    return sorted((name, os.stat(os.path.join(out, name)).st_mode & 0o777)
                  for name in os.listdir(out))


def walk_out(parents):
    native = os.path.join(parents[0], "native")
    os.makedirs(os.path.join(native, "m"))
    _, want, _ = hc.run(["env", "P=" + native, "OPATH=" + OPATH, "sh", "-c",
                         SCRIPT.format(mp=os.path.join(native, "m"))], "the walks natively")
    want_tree = expected_tree(native)
    opened = want.splitlines()[-6:]
    hc.check(want.split()[:3] == ["directory", "600", "2"] and want_tree == [("g", 0o600)] and
             opened == ["8 True P/out/g"] * 4 + ["4 True P/out"] * 2,
             "negative control: natively the script printed %r and made %r" % (want, want_tree))
    hc.say("natively: %s" % " ".join(want.split()))
    for where in parents:
        db = os.path.join(where, "db")
        hc.run([hc.AMINO, "mkfs", db], "amino mkfs in %s" % where)
        for backend in hc.BACKENDS:
            parent = os.path.join(where, backend)
            mp = os.path.join(parent, "m")
            os.makedirs(mp)
            argv = ["env", "P=" + parent, "OPATH=" + OPATH, "sh", "-c", SCRIPT.format(mp=mp)]
            rc, out, err = hc.run(hc.amino_run(backend, argv, mounts=[(mp, db)]),
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
