#!/usr/bin/env python3
"""An unprivileged tracee (uid and gid 65534, no supplementary groups, dropped with setpriv
inside `amino run`; the monitor runs as root) meets files a root-run process created in an Amino
mount: private directories and files (0700, 0600), read-only ones, a searchable-only and a
listable-only directory, a sticky directory, a world-writable one. permprobe tries ~60 calls on
them (read, write, list, create, unlink, rename, chmod, chown, truncate, utimes, access,
symlinks) and prints each result; the same is done natively on a host directory with identical
owners and modes, and the results must agree call for call, as must the trees left behind.

The native run must itself show the credentials at work (a few refusals and permissions are
asserted), or the comparison would prove nothing.
"""

import os
import shutil
import sys

import mount_common as mc

NOBODY = 65534

# Native facts the comparison relies on: if the unprivileged run does not produce these, it did
# not run unprivileged and the comparison is void.
EXPECTED_NATIVE = [
    "open-r priv/secret: EACCES",
    "list priv: EACCES",
    "open-r pub/secret: EACCES",
    "unlink sticky/rootfile: EPERM",
    'open-r pub/file: ok "public|"',
    "create shared/d/f: ok",
]


def compare(kind, native, amino):
    n, a = native.splitlines(), amino.splitlines()
    diffs = []
    for i in range(max(len(n), len(a))):
        x = n[i] if i < len(n) else "(nothing)"
        y = a[i] if i < len(a) else "(nothing)"
        if x != y:
            diffs.append("  native: %s\n  amino:  %s" % (x, y))
    if diffs:
        raise mc.Failure("%s: %d difference(s) between native and the Amino mount:\n%s" % (
            kind, len(diffs), "\n".join(diffs)))


def body(args, scratch):
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise mc.Failure("setpriv (util-linux) is not installed")
    # The probe must be executable by the unprivileged user wherever the build lives.
    probe = os.path.join(scratch.sub("bin"), "permprobe")
    shutil.copy(mc.prog("permprobe"), probe)
    os.chmod(probe, 0o755)
    drop = [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]

    host = scratch.sub("host")
    mc.run([probe, "setup", host], "native permprobe setup")
    _, native, _ = mc.run(drop + [probe, "probe", host], "native permprobe probe (uid 65534)")
    _, native_tree, _ = mc.run([probe, "tree", host], "native permprobe tree")
    missing = [e for e in EXPECTED_NATIVE if e not in native.splitlines()]
    if missing:
        raise mc.Failure("the native unprivileged run lacks %s; it printed:\n%s" % (
            missing, native))

    db, mp = scratch.sub("db"), scratch.sub("mnt")
    mc.mkfs(db)
    mounts = [(mp, db)]
    mc.run(mc.amino_run(mounts, [probe, "setup", mp]), "amino run permprobe setup (root)")
    _, amino, _ = mc.run(mc.amino_run(mounts, drop + [probe, "probe", mp]),
                         "amino run setpriv permprobe probe (uid 65534)")
    _, amino_tree, _ = mc.run(mc.amino_run(mounts, [probe, "tree", mp]),
                              "amino run permprobe tree (root)")
    compare("results of the unprivileged calls", native, amino)
    mc.say("%d calls as uid %d: identical results natively and on the mount (%d refused)" % (
        len(native.splitlines()), NOBODY,
        sum(1 for l in native.splitlines() if not l.split(": ", 1)[1].startswith("ok"))))
    compare("trees left behind", native_tree, amino_tree)
    mc.say("trees left behind: identical (%d entries)" % len(native_tree.splitlines()))
    mc.say("amino fsck: " + mc.fsck(db))


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("needs root (the monitor runs as root and the tracee drops to uid 65534)")
        sys.exit(77)
    sys.exit(mc.main(body, __doc__))
