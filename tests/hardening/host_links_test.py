#!/usr/bin/env python3
"""Host symbolic links into a mount lead into the mount (issue 15, item 3): with
`proj -> MP` (as `~/proj -> ~/amino/proj`) the kernel followed the link to the mount point's
own host directory, so files written through it landed there, on the host, and reads found
nothing (as root the cover made the writes fail with EROFS instead). On every backend, as root
and as the unprivileged user 65534 (no cover), bash writes and reads through a link to the
mount point, a link to a directory only the mount has (dangling on the host), a cd through a
link, `..` after one, and a link reached through /proc/self/cwd: every file must be in the mount, read back through either name, and
the host directory under the mount point must stay empty.
Negative control: natively, with an ordinary directory in place of the mount, the same script
gives the same output and puts the same files there."""

import os
import sys

import hardening_common as hc

SCRIPT = r'''
set -e
cd "$W"
ln -s "$MP" proj
ln -s "$MP/sub" down
echo a > proj/a
mkdir proj/sub
echo b > down/b
mkdir -p down/deep/er
echo c > down/deep/er/c
cd proj/sub
echo d > d
cd "$W"
echo e > down/../e
echo g > /proc/self/cwd/proj/g
cat proj/a down/b "$MP/sub/deep/er/c" "$MP/sub/d" proj/sub/../e proj/g
ls down | tr '\n' ' '
'''
EXPECTED = "a\nb\nc\nd\ne\ng\nb d deep "
FILES = {"a": "a\n", "e": "e\n", "g": "g\n", "sub/b": "b\n", "sub/d": "d\n", "sub/deep/er/c": "c\n"}


def check_tree(read, what):
    for rel, text in FILES.items():
        got = read(rel)
        hc.check(got == text, "%s: %s holds %r, not %r" % (what, rel, got, text))


def run_script(argv_prefix, w, mp, what, env):
    _, out, _ = hc.run(argv_prefix(["bash", "-c", SCRIPT]), what, env=env)
    hc.check(out == EXPECTED, "%s: printed %r, not %r" % (what, out, EXPECTED))


def body(scratch):
    w = os.path.join(scratch, "native")
    mp = os.path.join(w, "m")
    os.makedirs(mp)
    run_script(lambda a: a, w, mp, "the script natively", dict(os.environ, W=w, MP=mp))

    def native_read(rel):
        with open(os.path.join(mp, rel)) as f:
            return f.read()
    check_tree(native_read, "natively")
    hc.say("natively: every file reached the directory through the links")

    for backend in hc.BACKENDS:
        for user in ("root", "nobody"):
            w = os.path.join(scratch, "%s-%s" % (backend, user))
            mp, db = os.path.join(w, "m"), os.path.join(w, "db")
            os.makedirs(mp)
            wrap = lambda a: a
            if user == "nobody":
                for d in (w, mp):
                    os.chown(d, hc.NOBODY, hc.NOBODY)
                wrap = hc.as_nobody
            hc.run(wrap([hc.AMINO, "mkfs", db]), "mkfs as %s" % user)
            what = "the script on a %s mount as %s" % (backend, user)
            run_script(lambda a: wrap(hc.amino_run(backend, a, mounts=[(mp, db)])), w, mp, what,
                       dict(os.environ, W=w, MP=mp))
            host = os.listdir(mp)
            hc.check(host == [], "%s: the host directory under the mount point got %r" % (
                what, host))

            def served_read(rel):
                _, text, _ = hc.run(wrap(hc.amino_run(backend, ["cat", os.path.join(mp, rel)],
                                                      mounts=[(mp, db)])), "cat " + rel)
                return text
            check_tree(served_read, "%s, read through the mount point" % what)
            hc.say("%s: every file is in the mount; the host directory is empty" % what)


if __name__ == "__main__":
    sys.exit(hc.main(body))
