#!/usr/bin/env python3
"""Deadlocks and lock timeouts among application transactions (programs/deadlock.c).

Cycle: T1 writes a/x, T2 writes b/y, then (after a pipe handshake) T1 writes b/y and T2 writes
a/x. Exactly one of them gets AMINO_EABORTED (EDEADLK), from that write, from its later calls
and from amino_commit (or ends it with amino_abort); the other commits; nothing hangs; the
victim's writes are gone (a/x and b/y hold the survivor's, b/z the victim wrote after the abort
does not exist). How long the two blocked writes took to return is reported.

Lock timeout: under `amino run --lock-timeout L`, a transaction waiting for a lock held by a
transaction that just sleeps gets EDEADLK after about L seconds (L = 1 and 2; between L and L +
0.75 s), as does its commit; the sleeper commits. A write outside any transaction that waits for
a lock of its own thread's suspended transaction fails with EDEADLK after the timeout too (no
hang), and the transaction, attached again, commits. `amino fsck` is clean after each.
"""

import re
import sys

import txn_common as tc

mc = tc.mc

# Files between a/x and b/y, so that their records lie on different database pages.
FILLERS = 48


def body(args, scratch):
    fs = tc.Fs(scratch, "fs")
    dl = mc.prog("deadlock")
    fs.run(["mkdir", fs.path("d")])
    fs.run([dl, "setup", fs.path("d"), str(FILLERS)])
    times = []
    for i in range(tc.scaled(2, 2)):
        end = ("commit", "abort")[i % 2]
        _, out, _ = fs.run([dl, "cycle", fs.path("d"), end], "deadlock cycle (victim ends with "
                           "amino_%s)" % end, extra=["--lock-timeout", "5"], timeout=20)
        tc.say(out.strip())
        m = re.search(r"T(\d) \(the \w+, id \d+\) was aborted after ([\d.]+) s, T(\d) "
                      r"committed \(its write waited ([\d.]+) s\)", out)
        if not m:
            raise tc.Failure("no outcome in the cycle's output:\n" + out)
        times.append(max(float(m.group(2)), float(m.group(4))))
        winner = ("T%s\n" % m.group(3)).encode()
        d = tc.subtree(fs.tree(), "d")
        found = {p: d[p]["data"] for p in ("a/x", "b/y") if p in d}
        if found != {"a/x": winner, "b/y": winner} or "b/z" in d:
            raise tc.Failure("after the cycle, from outside: %r (b/z %s); expected both files "
                             "to hold %r and no b/z" % (found, "exists" if "b/z" in d else
                                                         "absent", winner))
        fs.fsck("the deadlock cycle")
    tc.say("deadlock resolution (the longer of the two blocked writes): max %.4f s over %d "
           "cycles" % (max(times), len(times)))

    for timeout in (1, 2):
        _, out, _ = fs.run([dl, "timeout", fs.path("d"), str(timeout + 2)],
                           "deadlock timeout with --lock-timeout %d" % timeout,
                           extra=["--lock-timeout", str(timeout)], timeout=timeout + 15)
        m = re.search(r"failed after ([\d.]+) s", out)
        waited = float(m.group(1)) if m else -1
        if not timeout - 0.05 <= waited <= timeout + 0.75:
            raise tc.Failure("with --lock-timeout %d the waiting write failed after %.3f s; "
                             "expected between %d and %.2f s\n%s" % (timeout, waited, timeout,
                                                                       timeout + 0.75, out))
        tc.say("--lock-timeout %d: %s" % (timeout, out.strip()))
        fs.fsck("the lock timeout")

    # A call outside any transaction that waits for a lock nobody will release (its own
    # thread's suspended transaction holds it) fails after the timeout instead of hanging.
    _, out, _ = fs.run([dl, "suspended", fs.path("d")], "a plain write behind a suspended "
                       "transaction", extra=["--lock-timeout", "1"], timeout=20)
    m = re.search(r"failed after ([\d.]+) s", out)
    waited = float(m.group(1)) if m else -1
    if not 0.95 <= waited <= 1.75:
        raise tc.Failure("the plain write behind a suspended transaction failed after %.3f s; "
                         "expected between 0.95 and 1.75 s\n%s" % (waited, out))
    tc.say(out.strip())
    fs.fsck("the plain write behind a suspended transaction")


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__))
