#!/usr/bin/env python3
"""Transactions in shell scripts with `amino txn` (the `amino` on PATH is the one under test).

  commit   amino run -- sh -c 'amino txn begin; mv a b; echo x > c; amino txn commit':
           from outside afterwards, a is gone, b holds a's content, c holds x
  abort    the same ending in `amino txn abort`: the tree is identical to before (every field
           `amino export` keeps, mtimes included)
  status   `amino txn status` prints "none", then "transaction ID, depth 1", "... depth 2" (a
           new id) inside a nested begin, the first id again after the nested abort, "none"
           after the commit
  exit     a shell that exits with its transaction open leaves nothing of it
  errors   `amino txn commit` outside `amino run` exits 1 saying it is not running under
           `amino run`; under it with no transaction open, exits 1 saying so

`amino fsck` is clean at the end.

With --subshell, instead: transactions of subshells, `(amino txn begin; echo i > i; amino txn
commit)`, alone and nested in the shell's own transaction. The shell (dash) runs the last
command of a subshell in the subshell's own process (exec without fork): `amino txn commit`
must still commit the subshell's transaction, and the files must be there afterwards.
"""

import os
import re
import sys

import txn_common as tc

mc = tc.mc


def extra(p):
    p.add_argument("--subshell", action="store_true",
                   help="the subshell scenarios instead of the others")


def subshell(fs, sh):
    failures = []
    for d, script, want in (
            ("alone", "(amino txn begin; echo inner > i; amino txn commit); amino txn status",
             {"i": b"inner\n"}),
            ("nested", "amino txn begin; echo outer > o; (amino txn begin; echo inner > i; "
             "amino txn commit); amino txn commit", {"o": b"outer\n", "i": b"inner\n"})):
        rc, out, err = sh("mkdir %s; cd %s; %s" % (d, d, script), "subshell " + d, check=False)
        found = {p: e.get("data") for p, e in tc.subtree(fs.tree(), d).items() if p != "."}
        if rc != 0 or found != want:
            failures.append("%s: sh -c '%s' exited %d (stderr %r) and left %r; expected status "
                            "0 and %r" % (d, script, rc, err.strip(), found, want))
        else:
            tc.say("subshell %s: committed" % d)
    if failures:
        raise tc.Failure("transactions of subshells:\n  " + "\n  ".join(failures))
    fs.fsck("the subshell scripts")


def body(args, scratch):
    os.environ["PATH"] = os.path.dirname(os.path.abspath(mc.AMINO)) + ":" + os.environ["PATH"]
    fs = tc.Fs(scratch, "fs")

    # `amino txn` runs traced: in the sanitizer build LeakSanitizer, which cannot work under a
    # tracer, must stay off in it (the monitor itself keeps it).
    no_leak_check = "export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

    def sh(script, what, check=True):
        return fs.run(["sh", "-c", "set -e; %s; cd %s; %s" % (no_leak_check, fs.mp, script)],
                      what, check=check)

    if args.subshell:
        return subshell(fs, sh)

    sh("mkdir s1 s2 s3; for d in s1 s2; do echo A > $d/a; echo old > $d/c; done", "setup")
    before = fs.tree()

    sh("cd s1; amino txn begin; mv a b; echo x > c; amino txn commit", "commit script")
    s1 = tc.subtree(fs.tree(), "s1")
    found = {p: e["data"] for p, e in s1.items() if p != "."}
    if found != {"b": b"A\n", "c": b"x\n"}:
        raise tc.Failure("after the committed script s1 holds %r; expected b = A, c = x" % found)
    tc.say("commit: mv and redirection took effect")

    sh("cd s2; amino txn begin; mv a b; echo x > c; ls > listing; amino txn abort", "abort script")
    tc.expect_same(tc.subtree(before, "s2"), tc.subtree(fs.tree(), "s2"),
                   "s2 after the aborted script, against before")
    tc.say("abort: the tree is identical to before")

    _, out, _ = sh("amino txn status; amino txn begin; amino txn status; amino txn begin; "
                   "amino txn status; amino txn abort; amino txn status; amino txn commit; "
                   "amino txn status", "status script")
    lines = out.splitlines()
    pattern = re.compile(r"^transaction (\d+), depth (\d)$")
    m = [pattern.match(l) for l in lines]
    if (len(lines) != 5 or lines[0] != "none" or lines[4] != "none" or not all(m[1:4]) or
            [x.group(2) for x in m[1:4]] != ["1", "2", "1"] or m[1].group(1) != m[3].group(1) or
            m[1].group(1) == m[2].group(1)):
        raise tc.Failure("amino txn status printed:\n%s\nexpected none, transaction N depth 1, "
                         "transaction M depth 2, transaction N depth 1, none" % out)
    tc.say("status: " + " | ".join(lines))

    sh("cd s3; echo kept > kept; amino txn begin; echo y > d; mkdir e; rm kept; exit 0",
       "script exiting inside its transaction")
    s3 = tc.subtree(fs.tree(), "s3")
    found = {p: e.get("data") for p, e in s3.items() if p != "."}
    if found != {"kept": b"kept\n"}:
        raise tc.Failure("after a shell exited inside its transaction s3 holds %r; expected "
                         "only kept" % found)
    tc.say("exit: the open transaction left nothing")

    rc, out, err = mc.run([mc.AMINO, "txn", "commit"], "amino txn commit natively", check=False)
    if rc != 1 or "not running under 'amino run'" not in err:
        raise tc.Failure("amino txn commit outside amino run: exit %d, stderr %r; expected 1 and "
                         "a message that it is not running under 'amino run'" % (rc, err))
    tc.say("outside amino run: exit 1, " + err.strip())
    rc, out, err = sh("amino txn commit", "amino txn commit with no transaction", check=False)
    if rc != 1 or "no transaction is open" not in err:
        raise tc.Failure("amino txn commit with no transaction: exit %d, stderr %r; expected 1 "
                         "and 'no transaction is open'" % (rc, err))
    tc.say("no transaction: exit 1, " + err.strip())
    fs.fsck("the scripts")


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__, extra))
