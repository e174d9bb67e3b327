#!/usr/bin/env python3
"""Eight processes append records to four files in one directory of an Amino mount (with
O_APPEND) and rename the files now and then, while eight others list the directory and read
the files. Readers check that every listing shows each file exactly once and that every record
they read is whole, valid and in its writer's order; at the end every record is present exactly
once (no lost update), `amino fsck` finds the database consistent, and nothing hung.

The same workload runs natively first, on a host directory: the workload's own checks must
hold there (a test whose workload fails natively proves nothing about Amino).
"""

import re
import sys

import mount_common as mc

FILES, APPENDERS, READERS, RENAME_EVERY = 4, 8, 8, 10


def stress_argv(d, n, base=0, appenders=APPENDERS, readers=READERS):
    return [mc.prog("mstress"), "stress", d, str(FILES), str(appenders), str(readers), str(n),
            str(base), str(RENAME_EVERY)]


def reader_records(out):
    """Records the readers checked, from their summary lines (0 means they saw nothing)."""
    return sum(int(m) for m in re.findall(r"^reader \d+: \d+ passes, (\d+) records", out, re.M))


def body(args, scratch):
    n = max(20, int(500 * mc.SCALE))
    # Natively: the workload and its checks are sound.
    host = scratch.sub("host")
    mc.run([mc.prog("mstress"), "setup", host + "/d", str(FILES)], "native setup")
    mc.run(stress_argv(host + "/d", n), "native stress")
    mc.run([mc.prog("mstress"), "verify", host + "/d", str(FILES), "0", str(APPENDERS), str(n)],
           "native verify")
    mc.say("native: %d appenders x %d records: verified" % (APPENDERS, n))

    db, mp = scratch.sub("db"), scratch.sub("mnt")
    mc.mkfs(db)
    mounts = [(mp, db)]
    mc.run(mc.amino_run(mounts, [mc.prog("mstress"), "setup", mp + "/d", str(FILES)]),
           "amino run mstress setup")
    _, out, err = mc.run(mc.amino_run(mounts, stress_argv(mp + "/d", n)),
                         "amino run mstress stress (%d appenders, %d readers, %d records each)" % (
                             APPENDERS, READERS, n))
    summary = [l for l in out.splitlines() if l.startswith(("stress:", "reader 0:"))]
    for line in summary:
        mc.say("amino: " + line)
    if reader_records(out) == 0:
        raise mc.Failure("the readers checked no record at all: the test exercised nothing\n" +
                         out)
    _, out, _ = mc.run(mc.amino_run(mounts, [mc.prog("mstress"), "verify", mp + "/d", str(FILES),
                                             "0", str(APPENDERS), str(n)]),
                       "amino run mstress verify")
    mc.say("amino: " + out.strip())
    mc.say("amino fsck: " + mc.fsck(db))


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__))
