#!/usr/bin/env python3
"""Python programs use transactions through ctypes (ctypes_client.py loads libamino.so from
AMINO_LIBAMINO). Natively amino_available() is 0 and amino_begin fails with ENOSYS; under
`amino run` a file written in an aborted transaction is gone (checked by the program and from
outside), one written in a committed transaction remains, and amino_commit with no transaction
fails with ENOENT. `amino fsck` is clean.
"""

import os
import sys

import txn_common as tc

mc = tc.mc


def body(args, scratch):
    if not tc.LIBAMINO:
        raise tc.Failure("AMINO_LIBAMINO is not set (ctest sets it to libamino.so)")
    client = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctypes_client.py")
    _, out, _ = mc.run([sys.executable, client, tc.LIBAMINO, "native"], "ctypes client natively")
    tc.say("natively: " + out.strip())
    fs = tc.Fs(scratch, "fs")
    fs.run(["mkdir", fs.path("py")])
    _, out, _ = fs.run([sys.executable, client, tc.LIBAMINO, "served", fs.path("py")])
    tc.say("amino run: " + out.strip())
    found = {p: e["data"] for p, e in tc.subtree(fs.tree(), "py").items() if p != "."}
    if found != {"committed": b"committed from Python\n"}:
        raise tc.Failure("from outside the directory holds %r; expected only 'committed'" % found)
    fs.fsck("the Python program")


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__))
