#!/usr/bin/env python3
"""Paths after a chroot reach the mount, as a real directory there would be reached (issue 15,
item 7): programs/rootprobe chroots to the mount point's parent and works in the mount by
absolute paths, ".." above its root, a cwd inside the mount, getcwd, an absolute symbolic link,
then chroots to the mount point itself and works from there. Its lines natively (a real
directory in place of the mount) and on a mount must be the same, on every backend, as root
(with the cover) and as the unprivileged 65534 in a user namespace of its own (`unshare -Ur`,
no cover); the host directory under the mount point stays empty and the files are in the
mount. Also: chroot into the mount point works, also by a relative path from a cwd in the
mount, and so does one that leaves the mount for a host directory ("../.." from a directory in
it; before, both failed with EPERM); chroot into a directory inside a mount fails with EPERM (it
has no host directory for the kernel), and name_to_handle_at of a file in a mount with
EOPNOTSUPP (no kernel handle), also by a relative path from a cwd in the mount.
Negative control: the monitor of 34e4dc2, which passed absolute paths after a chroot to the
kernel, fails the first comparison: as root the probe's writes met the cover (EROFS), and as
65534 they went into the host directory."""

import os
import shutil

import hardening_common as hc


def probe_lines(argv, what):
    _, out, _ = hc.run(argv, what)
    return out.splitlines()


def check_mount(backend, who, mp, db, run_as, expected):
    hc.check(os.listdir(mp) == [], "%s, %s: the probe wrote %r into the host directory" % (
        backend, who, os.listdir(mp)))
    _, out, _ = hc.run(run_as(hc.amino_run(backend, ["cat", os.path.join(mp, "f"),
                                                     os.path.join(mp, "g")], mounts=[(mp, db)])),
                       "%s, %s: cat the probe's files in the mount" % (backend, who))
    hc.check(out == "in the mountat the new root", "%s, %s: the mount holds %r" % (
        backend, who, out))
    hc.check(expected, "no expected lines")


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the probe chroots: run this test as root")
    probe = hc.prog("rootprobe")
    users = [("root", lambda argv: argv, []),
             ("65534", hc.as_nobody, ["unshare", "-Ur"])]
    for who, run_as, prefix in users:
        home = os.path.join(scratch, who)
        os.mkdir(home)
        if who != "root":
            os.chown(home, hc.NOBODY, hc.NOBODY)
        native = os.path.join(home, "native")
        hc.run(run_as(["mkdir", "-p", os.path.join(native, "m")]))
        expected = probe_lines(run_as(prefix + [probe, native, "m"]),
                               "rootprobe natively as %s" % who)
        hc.check("list-root=d,f,g" in expected and "getcwd=/m/d" in expected,
                 "negative control: natively as %s the probe said %r" % (who, expected))
        for backend in hc.BACKENDS:
            parent = os.path.join(home, "p-" + backend)
            mp = os.path.join(parent, "m")
            db = os.path.join(home, "db-" + backend)
            hc.run(run_as(["mkdir", "-p", mp]))
            hc.run(run_as([hc.AMINO, "mkfs", db]), "mkfs")
            got = probe_lines(run_as(hc.amino_run(backend, prefix + [probe, parent, "m"],
                                                  mounts=[(mp, db)])),
                              "rootprobe on %s as %s" % (backend, who))
            hc.check(got == expected, "%s, %s: natively %r, on the mount %r" % (
                backend, who, expected, got))
            check_mount(backend, who, mp, db, run_as, expected)
            hc.say("%s, %s: the probe's %d lines as natively; the files are in the mount" % (
                backend, who, len(got)))
    # As root: chroot into the mount point itself works, into a directory inside it does not;
    # no file in a mount has a kernel handle.
    mp = os.path.join(scratch, "root", "p-notify", "m")
    db = os.path.join(scratch, "root", "db-notify")
    # From a cwd in the mount, relative paths: to its root, and out of it to a host directory.
    script = ("mkdir -p %(mp)s/sub && cd %(mp)s/sub && %(p)s into %(mp)s && %(p)s into %(mp)s/sub"
              " && %(p)s into .. && %(p)s into ../.. && %(p)s into ../../../p-notify"
              " && %(p)s handle %(mp)s/f && %(p)s handle ../f && %(p)s handle %(home)s" %
              {"mp": mp, "p": probe, "home": scratch})
    for backend in hc.BACKENDS:
        _, out, _ = hc.run(hc.amino_run(backend, ["sh", "-c", script], mounts=[(mp, db)]),
                           "into and handle on %s" % backend)
        want = ["into=OK", "root=d,f,g,sub", "into=EPERM", "into=OK", "root=d,f,g,sub",
                "into=OK", "root=hl,hl2,m,x", "into=OK", "root=hl,hl2,m,x", "handle=EOPNOTSUPP",
                "handle=EOPNOTSUPP", "handle=OK"]
        hc.check(out.split() == want, "%s: into and handle said %r, not %r" % (
            backend, out.split(), want))
    hc.say("chroot into the mount point OK (also relatively from a cwd in it, and out of it to "
           "its parent), into a directory in it EPERM; handles EOPNOTSUPP")
    shutil.rmtree(os.path.join(scratch, "root"), ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(hc.main(body))
