#!/usr/bin/env python3
"""Shared transactions (programs/share.c checks each step from inside). A process B that does
not inherit A's transaction attaches to it by id (sent through a pipe), sees A's uncommitted
file and writes its own, which A sees; B detaches. Then A commits, and a third process and the
exported tree show both files; or A detaches too, and nothing remains, the id cannot be
attached any more. A process of uid 65534 gets EPERM attaching to root's transaction, root
attaches, and uid 65534 attaches to its own uid's. `amino fsck` is clean after each.
"""

import sys

import txn_common as tc

mc = tc.mc


def files(fs, d):
    return {p: e.get("data") for p, e in tc.subtree(fs.tree(), d).items() if p != "."}


def body(args, scratch):
    fs = tc.Fs(scratch, "fs")
    share = mc.prog("share")
    for variant, expected in (("commit", {"a": b"from A\n", "b": b"from B\n"}),
                              ("detach", {})):
        d = fs.path(variant)
        fs.run(["mkdir", d])
        _, out, _ = fs.run([share, d, variant])
        tc.say(out.strip())
        found = files(fs, variant)
        if found != expected:
            raise tc.Failure("%s: the directory holds %r afterwards; expected %r" % (
                variant, found, expected))
        fs.fsck(variant)
    # The unprivileged processes must be able to reach the mount's directory.
    fs.run(["sh", "-c", "mkdir %s && chmod 0777 %s" % (fs.path("perm"), fs.path("perm"))])
    _, out, _ = fs.run([share, "perm", fs.path("perm")])
    tc.say(out.strip())
    if files(fs, "perm"):
        raise tc.Failure("perm: the aborted transaction left files: %r" % files(fs, "perm"))
    fs.fsck("perm")


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__))
