#!/usr/bin/env python3
"""Nested transactions (programs/nest.c checks each step from inside): a child's abort keeps
the parent's earlier work, committed children's work becomes the parent's, a parent's abort
undoes a committed child, a parent cannot commit while a child of it is open in another process
(EBUSY), and amino_depth / amino_current follow every begin, commit and abort. From outside,
afterwards, exactly the files of committed parents remain (`amino export`), with the untouched
file as it was; `amino fsck` is clean.
"""

import sys

import txn_common as tc

mc = tc.mc

# What must remain in the directory: the three scenarios' committed files, and nothing else.
EXPECTED = {
    "base": b"base\n",
    "p1": b"parent\n",
    "c2": b"child 2\n",
    "c3": b"grandchild 3\n",
    "r1": b"parent\n",
    "r2": b"child in another process\n",
}


def body(args, scratch):
    fs = tc.Fs(scratch, "fs")
    fs.run(["sh", "-c", "mkdir %s && echo base > %s/base" % (fs.path("d"), fs.path("d"))])
    _, out, _ = fs.run([mc.prog("nest"), fs.path("d")])
    for line in out.splitlines():
        tc.say(line)
    d = tc.subtree(fs.tree(), "d")
    found = {path: e.get("data") for path, e in d.items() if path != "."}
    if found != EXPECTED:
        raise tc.Failure("after the nested transactions the directory holds\n  %r\nexpected\n  %r"
                         % (found, EXPECTED))
    tc.say("from outside: exactly the committed parents' files remain")
    fs.fsck("the nested transactions")


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__))
