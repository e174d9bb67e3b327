#!/usr/bin/env python3
"""Calls newer than the monitor fail with ENOSYS in a traced tree (issue 15, item 9): from
setxattrat (463, Linux 6.13) up, every x86-64 call number (the *xattrat family, open_tree_attr,
file_getattr, file_setattr, and numbers no kernel has yet) fails as on a kernel that predates
it, on every backend and with every --emulate mode; libamino's own calls are still answered.
The same through int $0x80, where io_uring was also still open before.
Before the fix they passed through: setxattrat on a mount point set an extended attribute on
the host directory under it, which must stay untouched.
Negative control: natively the same probe sets and reads the attribute on this kernel, so the
test would notice the calls passing through."""

import os
import sys

import hardening_common as hc

NEWER = ("setxattrat", "getxattrat", "file_getattr", "nr470", "nr600", "i386_file_getattr",
         "i386_io_uring_setup")


def parse(out):
    return dict(kv.split("=", 1) for kv in out.split())


def body(scratch):
    probe = hc.prog("newcallprobe")
    native_dir = os.path.join(scratch, "native")
    os.mkdir(native_dir)
    _, out, _ = hc.run([probe, native_dir], "native newcallprobe")
    native = parse(out)
    hc.say("natively: %s" % out.strip())
    hc.check(all(native[c] == "OK" for c in ("setxattrat", "getxattrat", "file_getattr",
                                             "i386_file_getattr", "i386_io_uring_setup")),
             "negative control: a call the probe makes does not work natively on this kernel "
             "(%r; they need Linux 6.17, i386 emulation and io_uring), so the test cannot tell "
             "a refusal from the kernel's own" % native)
    hc.check(os.getxattr(native_dir, "user.amino_probe") == b"1",
             "negative control: the native setxattrat left no attribute")
    db = os.path.join(scratch, "db")
    hc.run([hc.AMINO, "mkfs", db], "mkfs")
    mp = os.path.join(scratch, "m")
    for backend in hc.BACKENDS:
        for emulate in ("amino", "host", "none"):
            mounts = [(mp, db)] if emulate == "amino" else []
            argv = hc.amino_run(backend, [probe, mp], mounts=mounts,
                                extra=["--emulate", emulate])
            _, out, _ = hc.run(argv, "newcallprobe under %s --emulate %s" % (backend, emulate))
            r = parse(out)
            for call in NEWER:
                hc.check(r.get(call) == "ENOSYS", "%s --emulate %s: %s gave %s, expected "
                         "ENOSYS: %s" % (backend, emulate, call, r.get(call), out))
            want = "ANSWERED" if emulate == "amino" else "ENOSYS"
            hc.check(r.get("amino_probe") == want, "%s --emulate %s: libamino's probe gave "
                     "%s, expected %s" % (backend, emulate, r.get("amino_probe"), want))
            if os.path.isdir(mp):
                hc.check("user.amino_probe" not in os.listxattr(mp),
                         "%s --emulate %s: the host directory under the mount point got the "
                         "attribute" % (backend, emulate))
        hc.say("%s: every newer call fails with ENOSYS; libamino still answered" % backend)


if __name__ == "__main__":
    sys.exit(hc.main(body))
