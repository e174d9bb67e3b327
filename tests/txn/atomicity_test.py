#!/usr/bin/env python3
"""Atomicity of application transactions. One transaction (programs/atomic.c) creates a
directory and many files, writes, appends, truncates, chmods, renames files and a directory,
unlinks files, removes a directory and adds links, and checks it sees its own changes. Then:

  abort    the file system, copied out with `amino export`, is identical to before the
           transaction: every path, type, mode, owner, link count, mtime and byte
  kill     the process raises SIGKILL with the transaction open: identical to before too
  commit   every change is there: the tree equals the one the same program leaves natively
           (without a transaction) on a host directory, and differs from the tree before

`amino fsck` is clean after every scenario.
"""

import sys

import txn_common as tc

mc = tc.mc


def body(args, scratch):
    n = tc.scaled(40, 20)
    atomic = mc.prog("atomic")

    host = scratch.sub("host")
    mc.run([atomic, "populate", host + "/t", str(n)], "native atomic populate")
    mc.run([atomic, "mutate", host + "/t", str(n), "plain"], "native atomic mutate")
    expected = tc.snapshot(host + "/t")

    fs = tc.Fs(scratch, "fs")
    fs.run([atomic, "populate", fs.path("t"), str(n)])
    before = fs.tree()
    tc.say("populated: %d entries" % len(before))

    fs.run([atomic, "mutate", fs.path("t"), str(n), "abort"])
    tc.expect_same(before, fs.tree(), "the tree after an aborted transaction, against before")
    tc.say("abort: the tree is identical to before (contents, modes, owners, links, mtimes)")
    fs.fsck("abort")

    rc, out, err = fs.run([atomic, "mutate", fs.path("t"), str(n), "kill"], check=False)
    if rc != 128 + 9 and rc != -9:
        raise tc.Failure("the program that raised SIGKILL ended with status %d, not killed:\n%s%s"
                         % (rc, out, err))
    tc.expect_same(before, fs.tree(), "the tree after a SIGKILL inside a transaction, against "
                   "before")
    tc.say("kill: the tree is identical to before")
    fs.fsck("kill")

    fs.run([atomic, "mutate", fs.path("t"), str(n), "commit"])
    after = fs.tree()
    tc.expect_same(expected, tc.subtree(after, "t"),
                   "the tree after a committed transaction, against the same changes natively",
                   fields=("type", "mode", "nlink", "data"))
    changed = tc.differences(before, after)
    if len(changed) < n // 2:
        raise tc.Failure("the committed transaction changed only %d entries:\n  %s" % (
            len(changed), "\n  ".join(changed)))
    tc.say("commit: all %d changes are visible and equal the native result" % len(changed))
    fs.fsck("commit")


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__))
