#!/usr/bin/env python3
"""The kernel's mount calls cannot carry a mount's host directory elsewhere or uncover it
(issue 15, item 8): an unprivileged program in a user and mount namespace of its own
(`unshare -Urm`) bound the mount point elsewhere and wrote through the binding into the host
directory under the mount point; a root program could unmount or remount the cover over it
(mount_cover.h). Now mount, umount2, pivot_root, open_tree, move_mount, fspick and mount_setattr
fail with EINVAL on a path in a mount. On every backend: as uid 65534, `unshare -Urm` then a
bind of the mount point and a write through it: the bind fails and the host directory stays
empty; as root, umount, a remount and a tmpfs over the mount point fail, and a write to the
mount is served. The directories a new mount's options name are checked too: as 65534 in
`unshare -Urm`, an overlay whose upper directory is the mount point (mount(2)'s data string,
and fsconfig) would write into the host directory; it is refused, and the same overlay with an
upper directory elsewhere is mounted.
Negative control: natively (in a mount namespace of the test's own) the same bind succeeds and
the write lands in the bound directory; natively as 65534 the overlay over m is mounted and
its write lands in m."""

import os
import shutil
import sys

import hardening_common as hc

BIND = r'''
cd "$W"
if mount --bind m elsewhere 2>/dev/null; then echo bound; else echo refused; fi
echo x > elsewhere/f
'''
OVERLAY = r'''
cd "$W"
for upper in m u; do
  if mount -t overlay overlay -o lowerdir=l,upperdir=$upper,workdir=wk merged 2>/dev/null; then
    echo "$upper: mounted"; echo x > merged/f; umount merged
  else
    echo "$upper: refused"
  fi
done
python3 -c "$FSCONFIG"
'''
# The same options through the new mount API: fsopen (430), fsconfig (431) FSCONFIG_SET_STRING.
FSCONFIG = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for upper in ("m", "u"):
    fd = libc.syscall(430, b"overlay", 0)
    r = 0
    for key, value in ((b"lowerdir", b"l"), (b"upperdir", upper.encode()), (b"workdir", b"wk")):
        r = libc.syscall(431, fd, 1, key, value, 0)
        if r < 0:
            break
    print("fsconfig %s: %s" % (upper, "refused" if r < 0 else "set"))
    os.close(fd)
'''
OVERLAY_DIRS = ("l", "u", "wk", "merged")
AS_ROOT = r'''
cd "$W"
for what in "umount m" "mount -o remount,rw m" "mount -t tmpfs none m"; do
  if $what 2>/dev/null; then echo "$what: done"; else echo "$what: refused"; fi
done
echo served > m/f
cat m/f
'''


def body(scratch):
    unshare = shutil.which("unshare")
    if not unshare:
        raise hc.Failure("unshare (util-linux) is not installed")
    w = os.path.join(scratch, "native")
    for d in ("m", "elsewhere"):
        os.makedirs(os.path.join(w, d))
    _, out, _ = hc.run([unshare, "-m", "--propagation", "private", "sh", "-c", BIND],
                       "the bind natively", env=dict(os.environ, W=w))
    hc.check(out.split() == ["bound"] and os.listdir(os.path.join(w, "m")) == ["f"],
             "negative control: natively the bind printed %r and m holds %r" % (
                 out, os.listdir(os.path.join(w, "m"))))
    hc.say("natively: the bind succeeds and the write lands in the bound directory")
    w = os.path.join(scratch, "native-overlay")
    for d in ("m",) + OVERLAY_DIRS:
        os.makedirs(os.path.join(w, d))
    for d in (w,) + tuple(os.path.join(w, d) for d in ("m",) + OVERLAY_DIRS):
        os.chown(d, hc.NOBODY, hc.NOBODY)
    _, out, _ = hc.run(hc.as_nobody([unshare, "-Urm", "sh", "-c", OVERLAY]),
                       "the overlays natively as nobody",
                       env=dict(os.environ, W=w, FSCONFIG=FSCONFIG))
    hc.check(out.splitlines() == ["m: mounted", "u: mounted", "fsconfig m: set", "fsconfig u: set"]
             and os.listdir(os.path.join(w, "m")) == ["f"],
             "negative control: natively the overlays printed %r and m holds %r" % (
                 out, os.listdir(os.path.join(w, "m"))))
    hc.say("natively: an overlay with m as its upper directory writes into m")

    for backend in hc.BACKENDS:
        w = os.path.join(scratch, backend)
        mp, db = os.path.join(w, "m"), os.path.join(w, "db")
        for d in ("m", "elsewhere"):
            os.makedirs(os.path.join(w, d))
        for d in (w, mp, os.path.join(w, "elsewhere")):
            os.chown(d, hc.NOBODY, hc.NOBODY)
        hc.run(hc.as_nobody([hc.AMINO, "mkfs", db]), "mkfs as nobody")
        what = "unshare -Urm and a bind on a %s mount as nobody" % backend
        _, out, _ = hc.run(hc.as_nobody(hc.amino_run(
            backend, [unshare, "-Urm", "sh", "-c", BIND], mounts=[(mp, db)])), what,
            env=dict(os.environ, W=w))
        hc.check(out.split() == ["refused"], "%s: printed %r" % (what, out))
        hc.check(os.listdir(mp) == [], "%s: the host directory under the mount point got %r" % (
            what, os.listdir(mp)))
        hc.say("%s: the bind is refused; the host directory is empty" % what)

        for d in OVERLAY_DIRS:
            os.makedirs(os.path.join(w, d))
            os.chown(os.path.join(w, d), hc.NOBODY, hc.NOBODY)
        what = "unshare -Urm and overlays on a %s mount as nobody" % backend
        _, out, _ = hc.run(hc.as_nobody(hc.amino_run(
            backend, [unshare, "-Urm", "sh", "-c", OVERLAY], mounts=[(mp, db)])), what,
            env=dict(os.environ, W=w, FSCONFIG=FSCONFIG))
        hc.check(out.splitlines() == ["m: refused", "u: mounted", "fsconfig m: refused",
                                      "fsconfig u: set"], "%s: printed %r" % (what, out))
        hc.check(os.listdir(mp) == [], "%s: the host directory under the mount point got %r" % (
            what, os.listdir(mp)))
        hc.say("%s: an upper directory in the mount is refused, elsewhere mounted" % what)

        if os.geteuid() != 0:
            continue
        mp2, db2 = os.path.join(w, "root", "m"), os.path.join(w, "root", "db")
        os.makedirs(mp2)
        hc.run([hc.AMINO, "mkfs", db2], "mkfs")
        what = "umount, remount and tmpfs over a %s mount as root" % backend
        _, out, _ = hc.run(hc.amino_run(backend, ["sh", "-c", AS_ROOT], mounts=[(mp2, db2)]),
                           what, env=dict(os.environ, W=os.path.dirname(mp2)))
        expect = ["umount m: refused", "mount -o remount,rw m: refused",
                  "mount -t tmpfs none m: refused", "served"]
        hc.check(out.splitlines() == expect, "%s: printed %r" % (what, out))
        hc.check(os.listdir(mp2) == [], "%s: the host directory got %r" % (what, os.listdir(mp2)))
        hc.say("%s: each is refused; the write is served" % what)


if __name__ == "__main__":
    sys.exit(hc.main(body))
