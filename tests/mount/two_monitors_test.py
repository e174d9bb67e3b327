#!/usr/bin/env python3
"""Two `amino run` monitors serve one database at the same time. Each waits until it sees a file
the other created (the two see one file system), runs four appenders and four readers on the
same four files (records from both monitors interleave in them; every record either one's
readers see must be whole), waits until the other is done too, and then checks the combined
result itself: every record of all eight writers is present exactly once, as each monitor sees
it. `amino fsck` ends the test.
"""

import sys

import mount_common as mc

FILES, PER_SIDE, RENAME_EVERY = 4, 4, 10


def side_script(mp, me, other, n, base):
    ms = mc.prog("mstress")
    steps = [
        [ms, "handshake", mp + "/hs", "start" + me, "start" + other, "20"],
        [ms, "stress", mp + "/d", str(FILES), str(PER_SIDE), str(PER_SIDE), str(n), str(base),
         str(RENAME_EVERY)],
        [ms, "handshake", mp + "/hs", "done" + me, "done" + other, "20"],
        [ms, "verify", mp + "/d", str(FILES), "0", str(2 * PER_SIDE), str(n)],
    ]
    return ["sh", "-c", " && ".join(" ".join("'%s'" % w for w in s) for s in steps)]


def body(args, scratch):
    n = max(20, int(300 * mc.SCALE))
    db, mp = scratch.sub("db"), scratch.sub("mnt")
    mc.mkfs(db)
    mounts = [(mp, db)]
    mc.run(mc.amino_run(mounts, ["sh", "-c", "'%s' setup '%s/d' %d && mkdir '%s/hs'" % (
        mc.prog("mstress"), mp, FILES, mp)]), "amino run: setup")
    procs = {}
    for me, other, base in (("A", "B", 0), ("B", "A", PER_SIDE)):
        argv = mc.amino_run(mounts, side_script(mp, me, other, n, base))
        procs[me] = (argv, mc.start(argv, stdout=mc.subprocess.PIPE,
                                    stderr=mc.subprocess.PIPE))
    results = {}
    try:
        for me, (argv, p) in procs.items():
            try:
                results[me] = mc.finish(p, argv, "monitor %s" % me)
            except mc.Failure as e:  # a hang: still report what the other one said
                results[me] = (None, str(e) + "\n", "")
    finally:
        for _, p in procs.values():
            mc.kill_group(p.pid)
    failed = []
    for me, (rc, out, err) in results.items():
        for line in out.splitlines():
            if line.startswith(("handshake", "stress:", "verify:")):
                mc.say("monitor %s: %s" % (me, line))
        if rc != 0:
            failed.append("monitor %s %s:\n%s%s" % (
                me, "hung" if rc is None else "exited %d" % rc, mc._tail(out), mc._tail(err)))
    if failed:
        raise mc.Failure("\n".join(failed))
    mc.say("amino fsck: " + mc.fsck(db))


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__))
