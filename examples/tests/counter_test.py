#!/usr/bin/env python3
"""counter under load: INSTANCES processes each add 1, INCREMENTS times, to one file at once.

Every increment is a transaction, retried when the system aborts it to resolve a conflict, so
the file must end with exactly INSTANCES x INCREMENTS, each instance must exit 0, and `amino fsck`
must be clean. The run is timed (increments per second). Outside `amino run` the counter must
refuse (status 75) without creating the file.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "mount"))
import mount_common as mc  # noqa: E402

INSTANCES = 6
INCREMENTS = int(200 * mc.SCALE)


def body(args, scratch):
    counter = mc.prog("counter")
    host_file = os.path.join(scratch.path, "host-counter")
    rc, _, err = mc.run([counter, host_file, "1"], check=False)
    if rc != 75 or "amino run" not in err or os.path.exists(host_file):
        raise mc.Failure("outside amino run: status %d, %r, file %s" % (
            rc, err, "created" if os.path.exists(host_file) else "absent"))

    db, mp = scratch.sub("db"), scratch.sub("mnt")
    mc.mkfs(db)
    n = os.path.join(mp, "n")
    # Each instance's status is printed; the total is read back inside the same run.
    script = ('for i in $(seq %d); do ("$0" "$1" %d; echo "status $?") & done; wait; cat "$1"' %
              (INSTANCES, INCREMENTS))
    t0 = time.monotonic()
    _, out, _ = mc.run(mc.amino_run([(mp, db)], ["sh", "-c", script, counter, n]), "the counters")
    elapsed = time.monotonic() - t0
    lines = out.splitlines()
    statuses = [line for line in lines if line.startswith("status ")]
    if statuses != ["status 0"] * INSTANCES or not lines or not lines[-1].isdigit():
        raise mc.Failure("instances: %s; file: %r" % (statuses, lines[-1:]))
    total = int(lines[-1])
    mc.say("%d instances x %d increments: %d in %.1f s (%.0f increments/s)" % (
        INSTANCES, INCREMENTS, total, elapsed, total / elapsed))
    if total != INSTANCES * INCREMENTS:
        raise mc.Failure("the counter holds %d, not %d" % (total, INSTANCES * INCREMENTS))
    mc.fsck(db)


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__.splitlines()[0]))
