#!/usr/bin/env python3
"""AF_UNIX sockets bound at paths in a mount (issue 15, item 9): the socket is the mount's, never
a file in the host directory under the mount point. As root and as uid 65534 (who has no cover
over the host directory), on every backend, a program binds a socket in the mount, a child of
it connects, they talk, and the socket file is listed in the mount and served by `amino ls`,
while the host directory stays empty. Permissions are the stored node's: a socket made under
umask 077 by root refuses a connection from uid 65534 (EACCES), and accepts it after chmod 666.
Negative control: natively the same program leaves the socket file in the directory, so the
check of the host directory sees a socket that escapes."""

import os
import sys

import hardening_common as hc

PROGRAM = r'''
import errno, os, socket, sys

def err(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]

d = sys.argv[1]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(d + "/s")
srv.listen(2)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
print("connect", err(lambda: c.connect(d + "/s")))
a = srv.accept()[0]
c.sendall(b"ping")
print("read", a.recv(4).decode())
print("listed", sorted(os.listdir(d)))
if os.getuid() == 0:
    # A socket only its owner may write: another user's connect is refused, then allowed.
    os.umask(0o077)
    own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    own.bind(d + "/private")
    own.listen(2)
    for mode in (None, 0o666):
        if mode:
            os.chmod(d + "/private", mode)
        pid = os.fork()
        if pid == 0:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            x = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            print("as 65534", err(lambda: x.connect(d + "/private")), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
'''

ROOT_LINES = ["connect ok", "read ping", "listed ['s']"]
PRIVATE_LINES = ["as 65534 EACCES", "as 65534 ok"]


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the test runs the program as root and as 65534: run it as root")
    script = os.path.join(scratch, "sockets.py")
    with open(script, "w") as f:
        f.write(PROGRAM)
    os.chmod(script, 0o644)
    native = os.path.join(scratch, "native")
    os.mkdir(native)
    os.chmod(native, 0o777)
    _, out, _ = hc.run(["python3", script, native], "the program natively")
    hc.check(out.splitlines() == ROOT_LINES + PRIVATE_LINES,
             "natively the program printed %r" % out)
    hc.check("s" in os.listdir(native), "negative control: natively no socket file was left in "
             "the directory (%r), so an escape would not be seen" % os.listdir(native))
    hc.say("natively: the socket file is in the directory, as the check looks for")
    for who, wrap, owner in (("root", list, 0), ("uid 65534", hc.as_nobody, hc.NOBODY)):
        for backend in hc.BACKENDS:
            base = os.path.join(scratch, "%s-%d" % (backend, owner))
            os.mkdir(base)
            mp, db = os.path.join(base, "m"), os.path.join(base, "db")
            os.mkdir(mp)
            os.chown(base, owner, owner)
            os.chown(mp, owner, owner)
            hc.run(wrap([hc.AMINO, "mkfs", db]), "amino mkfs as %s" % who)
            if owner == 0:
                # Everyone may enter the mount's root, as the native directory above.
                hc.run([hc.AMINO, "run", "--mount", "%s=%s" % (mp, db), "--", "chmod", "777",
                        mp], "chmod of the mount's root")
            rc, out, err = hc.run(wrap(hc.amino_run(backend, ["python3", script, mp],
                                                    mounts=[(mp, db)])),
                                  "the program as %s on %s" % (who, backend), check=False)
            want = ROOT_LINES + (PRIVATE_LINES if owner == 0 else [])
            hc.check(rc == 0 and out.splitlines()[:len(want)] == want,
                     "%s, %s: the program printed %r (status %d)\n%s" % (who, backend, out, rc,
                                                                        err))
            hc.check(os.listdir(mp) == [], "%s, %s: the host directory under the mount point "
                     "holds %r" % (who, backend, os.listdir(mp)))
            _, listing, _ = hc.run(wrap([hc.AMINO, "ls", db, "/"]), "amino ls as %s" % who)
            hc.check("s" in listing.split() or "/s" in listing,
                     "%s, %s: the mount does not hold the socket:\n%s" % (who, backend, listing))
            hc.run(wrap([hc.AMINO, "fsck", db]), "amino fsck as %s" % who)
            hc.say("%s, %s: served in the mount, the host directory empty" % (who, backend))


if __name__ == "__main__":
    sys.exit(hc.main(body))
