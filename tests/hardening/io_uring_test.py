#!/usr/bin/env python3
"""io_uring is refused in traced trees (issue 15, item 1): under `amino run`, on every backend
and with every --emulate mode (and with --durability external, whose handler traps
io_uring_enter itself), io_uring_setup, io_uring_enter and io_uring_register fail with ENOSYS,
as on a kernel built without io_uring, so programs (libuv, ...) fall back to plain calls the
monitor sees. Negative control: natively the same probe sets up a ring on this kernel, so the
test would notice io_uring passing through.
Before the fix the ring was set up under the monitor and its operations reached the host."""

import os
import sys

import hardening_common as hc

REFUSED = {"setup": "ENOSYS", "enter": "ENOSYS", "register": "ENOSYS"}


def parse(out):
    return dict(kv.split("=", 1) for kv in out.split())


def body(scratch):
    _, out, _ = hc.run([hc.prog("uringprobe")], "native uringprobe")
    native = parse(out)
    hc.check(native["setup"] == "OK",
             "negative control: io_uring_setup fails natively on this kernel (%r), so the test "
             "cannot tell a refusal from the kernel's own" % native)
    hc.say("natively: %s" % out.strip())
    db = os.path.join(scratch, "db")
    hc.run([hc.AMINO, "mkfs", db], "mkfs")
    mp = os.path.join(scratch, "m")
    for backend in hc.BACKENDS:
        for extra, mounts in ((["--emulate", "amino"], [(mp, db)]),
                              (["--emulate", "amino", "--durability", "external"], [(mp, db)]),
                              (["--emulate", "host"], []), (["--emulate", "none"], [])):
            for who, wrap in (("root", list), ("uid 65534", hc.as_nobody)):
                if wrap is hc.as_nobody and mounts:
                    continue  # root's database is private; the tracee's uid is what matters
                argv = hc.amino_run(backend, [hc.prog("uringprobe")], mounts=mounts,
                                    extra=extra)
                _, out, _ = hc.run(wrap(argv), "uringprobe under %s %s" % (backend, extra))
                r = parse(out)
                hc.check(r == REFUSED, "%s %s as %s: expected every io_uring call refused with "
                         "ENOSYS, got %r" % (backend, " ".join(extra), who, r))
        hc.say("%s: every io_uring call fails with ENOSYS" % backend)


if __name__ == "__main__":
    sys.exit(hc.main(body))
