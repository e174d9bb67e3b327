#!/usr/bin/env python3
"""Paths through /proc's links reach the served directory, never the host one (issue 15, item
4): a process whose cwd is in a mount has, for the kernel, the host directory under the mount
point as its cwd, so /proc/self/cwd/x, /proc/PID/cwd/x and /proc/PID/task/TID/cwd/x wrote
there; /proc/self/root/MP/x and /proc/self/fd/N/x (N a served directory; also /dev/fd/N/x)
went around the monitor the same way. On every backend, bash writes through each link with its
cwd in a mount: every file must be in the mount, readlink /proc/self/cwd must name the served
directory (and cd to it stay there), and the host directory must stay empty.
Negative control: natively, the same script puts every file in its cwd."""

import os
import sys

import hardening_common as hc

SCRIPT = r'''
set -e
mkdir -p "$MP/sub"
cd "$MP/sub"
echo a > /proc/self/cwd/a
echo b > /proc/$$/cwd/b
echo c > /proc/$$/task/$$/cwd/c
echo d > "/proc/self/root$MP/sub/d"
exec 5<"$MP/sub"
echo e > /proc/self/fd/5/e
echo f > /dev/fd/5/f
mkdir /proc/self/cwd/g
readlink /proc/self/cwd
cd /proc/self/cwd && pwd -P
'''
NAMES = ["a", "b", "c", "d", "e", "f", "g"]


def check_files(listing, what):
    hc.check(sorted(listing.split()) == NAMES,
             "%s: expected %s in sub, found %r" % (what, NAMES, listing))


def body(scratch):
    native = os.path.join(scratch, "native")
    os.mkdir(native)
    _, out, _ = hc.run(["bash", "-c", SCRIPT], "the script natively",
                       env=dict(os.environ, MP=native))
    hc.check(out.split() == [native + "/sub"] * 2, "natively, readlink and pwd -P gave %r" % out)
    check_files(" ".join(os.listdir(os.path.join(native, "sub"))), "natively")
    hc.say("natively: every link leads to the cwd")
    for backend in hc.BACKENDS:
        db = os.path.join(scratch, "db-" + backend)
        mp = os.path.join(scratch, "m-" + backend)
        hc.run([hc.AMINO, "mkfs", db], "mkfs")
        env = dict(os.environ, MP=mp)
        _, out, _ = hc.run(hc.amino_run(backend, ["bash", "-c", SCRIPT], mounts=[(mp, db)]),
                           "the script on a %s mount" % backend, env=env)
        hc.check(out.split() == [mp + "/sub"] * 2,
                 "%s: readlink /proc/self/cwd and pwd -P after cd /proc/self/cwd gave %r, not "
                 "the served directory" % (backend, out))
        host = os.listdir(mp) if os.path.isdir(mp) else []
        hc.check(host == [], "%s: the host directory under the mount point got %r" % (
            backend, host))
        _, listing, _ = hc.run(hc.amino_run(backend, ["ls", mp + "/sub"], mounts=[(mp, db)]),
                               "ls of the mount")
        check_files(listing, "%s: in the mount" % backend)
        _, text, _ = hc.run(hc.amino_run(backend, ["cat"] + [
            "%s/sub/%s" % (mp, n) for n in NAMES if n != "g"], mounts=[(mp, db)]), "cat")
        hc.check(text.split() == [n for n in NAMES if n != "g"],
                 "%s: the files hold %r" % (backend, text))
        hc.say("%s: every link leads to the served directory; the host directory is empty" %
               backend)


if __name__ == "__main__":
    sys.exit(hc.main(body))
