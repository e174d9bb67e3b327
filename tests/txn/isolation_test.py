#!/usr/bin/env python3
"""Isolation of application transactions.

Bank: K = 16 accounts (4 KiB files starting with a number, spread over several database pages so
that transactions can run concurrently and deadlock) on a mount; P = 4 processes each do R
rounds of: begin, read two random accounts, move an amount from one to the other, write both,
append the transfer to the process's own ledger file, commit; a call or commit failing with
AMINO_EABORTED (EDEADLK) is retried (and counted). An auditor reads all accounts in transactions
meanwhile and fails if it ever sees a total other than the initial one. Afterwards the total is
unchanged, every ledger holds R transfers and every account equals its initial balance plus the
ledgers' transfers (no lost update), nothing hung, and `amino fsck` is clean; rounds/s and
retries are reported.

Readers outside transactions (programs/readwait.c): a read never returns another transaction's
uncommitted data: a read before the write gets the old content; a read after an uncommitted
write (by path, or through a descriptor opened before the write) waits until the transaction
ends and then gets the new content after a commit, the old one after an abort. A stat or a
listing never waits: while the transaction is open it answers at once with the last committed
size and names. A rename or link of the written file into a host directory fails with EXDEV
(mv's cue to copy), as natively, never with a conflict's EDEADLK. Another `amino run` on the same file system, started while a transaction of
the first one holds writes, starts, lists and stats at once (within 20 s while the transaction
stays open indefinitely): it sees the state before the transaction.

Negative controls: the same bank workload without transactions (`plain`) must be caught losing
updates by the final check and seeing half-done transfers by the auditor, natively and on the
mount, within a few trials.
"""

import os
import re
import subprocess
import sys
import time

import txn_common as tc

mc = tc.mc

K, P, INITIAL = 16, 4, 1000


def bank(wrap, d, rounds, seed, mode, audit, what):
    """setup, run, verify; returns (run status, run output, verify status, verify output)."""
    b = mc.prog("bank")
    mc.run(wrap([b, "setup", d, str(K), str(P), str(INITIAL)]), what + " setup")
    rc, out, err = mc.run(wrap([b, "run", d, str(K), str(P), str(rounds), str(INITIAL), str(seed),
                                mode, audit]), what + " run", check=False)
    vrc, vout, verr = mc.run(wrap([b, "verify", d, str(K), str(P), str(rounds), str(INITIAL)]),
                             what + " verify", check=False)
    return rc, out + err, vrc, vout + verr


def first_failure(text):
    lines = [l for l in text.splitlines() if l.startswith("FAIL")]
    return lines[0] if lines else ""


def control(name, trials, attempt):
    for i in range(trials):
        caught = attempt(i)
        if caught:
            tc.say("control %s: caught in trial %d: %s" % (name, i + 1, caught))
            return
    raise tc.Failure("control %s: the check passed a broken run %d times in a row" % (
        name, trials))


def other_run(fs, scratch):
    """A second `amino run` beside a transaction that holds writes and does not end."""
    os.environ["PATH"] = os.path.dirname(os.path.abspath(mc.AMINO)) + ":" + os.environ["PATH"]
    gate = os.path.join(scratch.sub("gate"), "fifo")
    ready = os.path.join(scratch.sub("gate"), "ready")
    os.mkfifo(gate)
    # `amino txn` runs traced: in the sanitizer build LeakSanitizer, which cannot work under a
    # tracer, must stay off in it (the monitor itself keeps it).
    holder = mc.start(fs.argv(["sh", "-c", "export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}"
                               "detect_leaks=0; amino txn begin && echo 1 > %s && "
                               "echo held > %s && read x < %s && amino txn commit" % (
                                   fs.path("rw", "t1"), ready, gate)]),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 30
        while not os.path.exists(ready) and holder.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        if not os.path.exists(ready):
            raise tc.Failure("the transaction's shell ended early: %r" % (holder.communicate(),))
        started = time.monotonic()
        _, out, _ = fs.run(["sh", "-c", "ls %s; stat -c %%s %s" % (
            fs.path("rw"), fs.path("rw", "v"))],
            "a second amino run beside an open transaction", timeout=20)
        took = time.monotonic() - started
        if out.split() != ["n", "v", "6"]:
            raise tc.Failure("the second run saw %r, not the state before the transaction "
                             "(n and v listed, v's size)" % out)
    finally:
        # Never waits: with no reader (the shell failed or ended), it is killed instead.
        try:
            g = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
            os.write(g, b"go\n")
            os.close(g)
        except OSError:
            mc.kill_group(holder.pid)
    rc, out, err = mc.finish(holder, ["sh"], "the transaction's shell")
    if rc != 0:
        raise tc.Failure("the transaction's shell exited %d: %s" % (rc, err))
    _, out, _ = fs.run(["cat", fs.path("rw", "t1")])
    if out != "1\n":
        raise tc.Failure("the transaction's file holds %r after its commit" % out)
    tc.say("another run beside an open transaction: started, listed and stat'ed in "
           "%.2f s" % took)


def body(args, scratch):
    rounds = tc.scaled(50)
    fs = tc.Fs(scratch, "fs")
    on_mount = lambda argv: fs.argv(argv)
    fs.run(["mkdir", fs.path("bank")])
    rc, out, vrc, vout = bank(on_mount, fs.path("bank"), rounds, 1, "txn", "audit",
                              "bank with transactions")
    if rc != 0 or vrc != 0:
        raise tc.Failure("bank with transactions:\n%s%s" % (mc._tail(out), mc._tail(vout)))
    retries = sum(int(x) for x in re.findall(r"^worker \d+: \d+ rounds, (\d+) retries", out, re.M))
    audits = re.search(r"^auditor: (\d+) audits, (\d+) retries", out, re.M)
    speed = re.search(r"^bank: (.*)$", out, re.M)
    if not audits or not speed or int(audits.group(1)) < 2:
        raise tc.Failure("the auditor did not audit during the run:\n" + out)
    tc.say("bank: %d processes x %d rounds on %d accounts: %s; %d retries; auditor %s audits, "
           "%s retries" % (P, rounds, K, speed.group(1), retries, audits.group(1),
                           audits.group(2)))
    tc.say(vout.strip())
    fs.fsck("the bank")

    fs.run(["mkdir", fs.path("rw")])
    _, out, _ = fs.run([mc.prog("readwait"), fs.path("rw"), "0.5"])
    for line in out.splitlines():
        tc.say("reader " + line)
    other_run(fs, scratch)
    fs.fsck("the readers")

    def plain_native(i, audit):
        d = scratch.sub("host", "%s%d" % (audit, i))
        rc, out, vrc, vout = bank(lambda a: a, d, 200, i, "plain", audit, "native plain bank")
        return first_failure(out if audit == "audit" else vout)

    def plain_mount(i):
        d = fs.path("plain%d" % i)
        fs.run(["mkdir", d])
        rc, out, vrc, vout = bank(on_mount, d, 100, i, "plain", "noaudit", "plain bank")
        return first_failure(vout)

    control("lost updates (native)", 5, lambda i: plain_native(i, "noaudit"))
    control("auditor (native)", 5, lambda i: plain_native(i, "audit"))
    control("lost updates (mount)", 5, plain_mount)


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__))
