#!/usr/bin/env python3
"""A traced program cannot outrank the monitor's filter with its own (issue 15, item 11): a
filter whose SECCOMP_RET_USER_NOTIF goes to the program's own listener outranks the monitor's
SECCOMP_RET_TRACE, and the listener's CONTINUE runs the call with no other filter consulted.
programs/ownlistener installs such a filter for openat, continues every notification, and
creates a file in a mount. In a traced tree a filter with a new listener is refused with EBUSY
on every backend, as the kernel itself refuses a second listener in a filter chain (which is
what the notify backend's own listener already gives), so the open reaches the monitor and the
file is in the mount; the host directory under the mount point stays empty.
Before the fix, under --backend seccomp the file was created in the host directory.
Negative control: natively the probe installs its listener and its open is continued."""

import os
import sys

import hardening_common as hc


def parse(out):
    return dict(kv.split("=", 1) for kv in out.split())


def body(scratch):
    probe = hc.prog("ownlistener")
    native = os.path.join(scratch, "native")
    os.mkdir(native)
    _, out, _ = hc.run([probe, os.path.join(native, "f")], "ownlistener natively")
    hc.check(parse(out) == {"listener": "OK", "open": "OK"} and
             os.path.exists(os.path.join(native, "f")),
             "negative control: natively the probe's own listener did not work: %s" % out)
    hc.say("natively: %s" % out.strip())
    db = os.path.join(scratch, "db")
    hc.run([hc.AMINO, "mkfs", db], "mkfs")
    mp = os.path.join(scratch, "m")
    for backend in hc.BACKENDS:
        name = "f-" + backend
        _, out, _ = hc.run(hc.amino_run(backend, [probe, os.path.join(mp, name)],
                                        mounts=[(mp, db)]), "ownlistener on %s" % backend)
        r = parse(out)
        hc.check(r.get("listener") == "EBUSY", "%s: the program's own listener was not refused "
                 "with EBUSY: %s" % (backend, out))
        hc.check(r.get("open") == "OK", "%s: the open failed: %s" % (backend, out))
        left = os.listdir(mp)
        hc.check(left == [], "%s: the host directory under the mount point got %r" % (
            backend, left))
        hc.run(hc.amino_run(backend, ["test", "-f", os.path.join(mp, name)], mounts=[(mp, db)]),
               "the file in the mount (%s)" % backend)
        hc.say("%s: %s; the file is in the mount" % (backend, out.strip()))


if __name__ == "__main__":
    sys.exit(hc.main(body))
