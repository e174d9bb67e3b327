#!/usr/bin/env python3
"""Committed transactions survive the death of the program and of the monitor, for
`amino run --durability sync`, `commit` and `async`.

programs/commitloop.c commits transactions in a loop (each creates c<N> and appends N to a log
file) and prints "committed N" after each amino_commit returns. The driver SIGKILLs the whole
process group of `amino run` (the monitor and the program at once) at a random moment after a
random number of commits, several times on the same file system. Afterwards `amino fsck` is
clean, every N printed is there (c<N> holding N, and N in the log, in order, once), and each
transaction is whole: c<N> exists exactly for the N in the log. Every iteration must have
committed something, so "nothing was committed" cannot pass.

This is a crash of processes only: every mode writes its log to the operating system at commit,
so all three must keep what was reported. What distinguishes `sync` and `commit` from `async`
-- surviving a crash of the machine -- cannot be simulated here and is not tested.

--seed repeats a run's timing; AMINO_TXN_SCALE multiplies the number of kills.
"""

import os
import random
import re
import select
import sys
import time

import txn_common as tc

mc = tc.mc


def extra(p):
    p.add_argument("--seed", type=int, help="seed of the kill moments (default: random)")


def kill_after(argv, commits, delay):
    """Runs argv until it has printed `commits` lines, waits `delay` seconds, kills the process
    group. Returns every N it printed (including lines still in the pipe)."""
    proc = mc.start(argv, stdout=mc.subprocess.PIPE, stderr=mc.subprocess.PIPE)
    fd = proc.stdout.fileno()
    data = b""
    try:
        limit = time.monotonic() + min(30.0, mc.remaining())
        while data.count(b"\n") < commits:
            if time.monotonic() > limit:
                raise tc.Failure("no progress: %d commits printed in 30 s by %s" % (
                    data.count(b"\n"), " ".join(argv)))
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    _, _, err = mc.finish(proc, argv)
                    raise tc.Failure("the program ended before it was killed (status %s):\n%s" % (
                        proc.returncode, err))
                data += chunk
        time.sleep(delay)
        mc.kill_group(proc.pid)
        rest, _ = proc.communicate()
        data += rest
        limit = time.monotonic() + 5
        while mc.group_alive(proc.pid):
            if time.monotonic() > limit:
                raise tc.Failure("processes %s still run 5 s after the kill" % mc.group_alive(
                    proc.pid))
            time.sleep(0.02)
    finally:
        mc.kill_group(proc.pid)
    text = data.decode(errors="replace")
    printed = [int(x) for x in re.findall(r"^committed (\d+)$", text, re.M)]
    if len(printed) != text.count("\n"):
        raise tc.Failure("unexpected output from the program:\n" + text)
    return printed


def check(fs, printed):
    """Every printed N is present and every transaction whole; returns the largest N present."""
    d = tc.subtree(fs.tree(), "d")
    log = [int(x) for x in d["log"]["data"].split()] if "log" in d else []
    files = {int(p[1:]): e["data"] for p, e in d.items() if re.fullmatch(r"c\d+", p)}
    if log != sorted(set(log)):
        raise tc.Failure("the log is not each N once in order: %r" % log)
    if sorted(files) != log:
        raise tc.Failure("torn transactions: files %r, log %r" % (sorted(files), log))
    bad = [n for n, data in files.items() if data != b"%d\n" % n]
    if bad:
        raise tc.Failure("files with wrong contents: %r" % bad)
    missing = sorted(set(printed) - set(log))
    if missing:
        raise tc.Failure("%d transaction(s) reported committed are missing: %r" % (
            len(missing), missing[:20]))
    return max(log) if log else -1


def body(args, scratch):
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    tc.say("seed %d" % seed)
    for durability in ("sync", "commit", "async"):
        fs = tc.Fs(scratch, durability)
        fs.run(["mkdir", fs.path("d")])
        reported, last = 0, -1
        for i in range(tc.scaled(3)):
            argv = fs.argv([mc.prog("commitloop"), fs.path("d"), str(last + 1), "1000000"],
                           durability=durability)
            printed = kill_after(argv, rng.randint(2, 30), rng.uniform(0, 0.05))
            fs.fsck("killing --durability %s (iteration %d)" % (durability, i + 1))
            present = check(fs, printed)
            if not printed or present < max(printed):
                raise tc.Failure("iteration %d: printed %r, present up to %d" % (
                    i + 1, printed[-3:], present))
            reported += len(printed)
            tc.say("--durability %s, kill %d: %d commits printed, all present (%d present)" % (
                durability, i + 1, len(printed), present - last))
            last = present
        tc.say("--durability %s: %d reported commits survived %d kills" % (
            durability, reported, tc.scaled(3)))


if __name__ == "__main__":
    sys.exit(tc.main(body, __doc__, extra))
