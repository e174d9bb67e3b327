#!/usr/bin/env python3
"""libamino's errors (programs/errors.c). Where no monitor provides transactions -- natively,
under `amino run --emulate=none` and under `amino run --emulate=host` -- amino_available() is 0
and every other call fails with ENOSYS. Under `amino run` with two mounts: amino_commit and
amino_abort with no transaction give ENOENT, amino_attach of an unknown id ENOENT and with a
transaction current EBUSY, a call on the second mount inside a transaction bound to the first
EXDEV (the first still works), a host file is not part of the transaction, suspend and attach
resume it; from outside afterwards, the aborted files are absent and the second mount holds only
what was written after the transaction. `amino fsck` is clean on both.
"""

import sys

import txn_common as tc

mc = tc.mc


def body(args, scratch):
    errors = mc.prog("errors")
    _, out, _ = mc.run([errors, "none"], "errors none (natively)")
    tc.say("natively: " + out.strip())
    for emulate in ("none", "host"):
        _, out, _ = mc.run([mc.AMINO, "run", "--emulate=" + emulate] + mc.RUN_OPTIONS +
                           ["--", errors, "none"], "errors none under --emulate=" + emulate)
        tc.say("amino run --emulate=%s: %s" % (emulate, out.strip()))

    one, two = tc.Fs(scratch, "one"), tc.Fs(scratch, "two")
    host = scratch.sub("host")
    _, out, _ = one.run([errors, "served", one.mp, two.mp, host],
                        more_mounts=[(two.mp, two.db)])
    tc.say("amino run, two mounts: " + out.strip())
    first = {p for p in one.tree() if p != "."}
    second = {p: e["data"] for p, e in two.tree().items() if p != "."}
    if first or second != {"g": b"other mount\n"}:
        raise tc.Failure("from outside: the first mount holds %r (expected nothing), the second "
                         "%r (expected g only)" % (sorted(first), second))
    one.fsck("the errors (first mount)")
    two.fsck("the errors (second mount)")


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__))
