#!/usr/bin/env python3
"""A stored program its caller may run but not read stays unreadable while it runs (issue 15):
the kernel runs a host copy of a stored program, which was readable by everyone (mode 0555), so
a tracee could read an execute-only program through /proc/self/exe, and the kernel left it
dumpable. programs/exeprobe opens its own /proc/self/exe and prints whether it is dumpable. As
uid 65534 under a root monitor, on every backend, a root-owned 0711 program stored in a mount
must give what the same program gives natively (EACCES, not dumpable), and a 0755 one what it
gives natively (readable, dumpable). Negative control: the two modes differ natively."""

import os
import shutil
import sys

import hardening_common as hc

MODES = (0o711, 0o755)


def body(scratch):
    probe = hc.prog("exeprobe")
    native = {}
    for mode in MODES:
        path = os.path.join(scratch, "native-%o" % mode)
        shutil.copy(probe, path)
        os.chmod(path, mode)
        _, out, _ = hc.run(hc.as_nobody([path]), "exeprobe %o natively" % mode)
        native[mode] = out.strip()
    hc.check(native[0o711] != native[0o755],
             "negative control: natively the probe cannot tell the modes apart: %r" % native)
    hc.say("natively: %s" % ", ".join("%o: %s" % (m, native[m]) for m in MODES))
    db = os.path.join(scratch, "db")
    mp = os.path.join(scratch, "m")
    hc.run([hc.AMINO, "mkfs", db], "mkfs")
    setup = " && ".join("cp %s %s/p%o && chmod %o %s/p%o" % (probe, mp, m, m, mp, m)
                        for m in MODES)
    hc.run(hc.amino_run(hc.BACKENDS[0], ["sh", "-c", setup], mounts=[(mp, db)]),
           "store the programs")
    for backend in hc.BACKENDS:
        got = {}
        for mode in MODES:
            _, out, _ = hc.run(hc.amino_run(backend, hc.as_nobody(["%s/p%o" % (mp, mode)]),
                                            mounts=[(mp, db)]),
                               "exeprobe %o on %s" % (mode, backend))
            got[mode] = out.strip()
        hc.check(got == native, "%s: %s; natively %s" % (
            backend, ", ".join("%o: %s" % (m, got[m]) for m in MODES),
            ", ".join("%o: %s" % (m, native[m]) for m in MODES)))
        hc.say("%s: as natively" % backend)


if __name__ == "__main__":
    sys.exit(hc.main(body))
