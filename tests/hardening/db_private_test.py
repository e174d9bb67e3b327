#!/usr/bin/env python3
"""The database is private to its owner (issue 15, item 13): after `amino mkfs` (even under
umask 000) the database directory is 0700 and every file in it 0600, and so are the log and
region files after writes under `amino run` on every backend. Another user opening it gets a
permission message naming the owner, not "not an Amino file system". A monitor run as root
serves an unprivileged tracee from it with the stored permissions.
Before the fix the directory was 0755 and its files 0644: anyone could read data.db."""

import os
import stat
import sys

import hardening_common as hc


def modes(db):
    """{name: mode} of the directory itself ('.') and every file in it."""
    out = {".": stat.S_IMODE(os.stat(db).st_mode)}
    for name in os.listdir(db):
        out[name] = stat.S_IMODE(os.lstat(os.path.join(db, name)).st_mode)
    return out


def check_private(db, when):
    m = modes(db)
    wrong = {n: "%04o" % v for n, v in m.items() if v != (0o700 if n == "." else 0o600)}
    hc.check(not wrong, "%s: expected the directory 0700 and every file 0600; these are not: %s"
             % (when, wrong))
    return m


def body(scratch):
    db = os.path.join(scratch, "db")
    hc.run(["sh", "-c", 'umask 000 && exec "$0" mkfs "$1"', hc.AMINO, db], "mkfs under umask 0")
    check_private(db, "after mkfs")
    mp = os.path.join(scratch, "m")
    for backend in hc.BACKENDS:
        # Enough data to reach the log, then a tracee of another user served by root's monitor.
        script = ("umask 000; head -c 1000000 /dev/zero > %s/big.%s && echo secret > %s/s && "
                  "chmod 600 %s/s && mkdir -m 777 %s/pub.%s && "
                  "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
                  "'cat %s/s 2>/dev/null && echo read; echo x > %s/pub.%s/f && echo wrote'"
                  % (mp, backend, mp, mp, mp, backend, mp, mp, backend))
        _, out, _ = hc.run(hc.amino_run(backend, ["sh", "-c", script], mounts=[(mp, db)]), "writes, %s" % backend)
        hc.check(out == "wrote\n", "%s: uid 65534 under root's monitor: expected the stored 0600 "
                 "file refused and a write in a 0777 directory allowed, got %r" % (backend, out))
        m = check_private(db, "after a run on %s" % backend)
        hc.check(any(n.startswith("log.") for n in m), "no log file in %s: %s" % (db, sorted(m)))
    hc.say("directory 0700 and files 0600 after mkfs and runs on %s" % " ".join(hc.BACKENDS))

    # Another user: a message about permissions, never "not an Amino file system".
    for backend in hc.BACKENDS:
        rc, out, err = hc.run(hc.as_nobody(hc.amino_run(backend, ["true"], mounts=[(mp, db)])),
                              check=False)
        hc.check(rc == 2 and "Permission denied" in err and "uid 0" in err and
                 "not an Amino file system" not in err,
                 "%s: amino run by uid 65534 on root's database: expected a permission message "
                 "naming the owner, got %d %r" % (backend, rc, err))
    for cmd in (["ls", db], ["fsck", db]):
        rc, out, err = hc.run(hc.as_nobody([hc.AMINO] + cmd), check=False)
        hc.check(rc == 2 and "Permission denied" in err and
                 "not an Amino file system" not in err,
                 "amino %s by uid 65534: expected a permission message, got %d %r"
                 % (cmd[0], rc, err))
    hc.say("another user is told the database is private: %s" % err.strip())
    hc.run([hc.AMINO, "fsck", db], "amino fsck")


if __name__ == "__main__":
    sys.exit(hc.main(body))
