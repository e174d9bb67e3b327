#!/usr/bin/env python3
"""The monitor is killed (SIGKILL) in the middle of a busy workload on a mount served with
`--durability sync`, again and again on the same database. The workload's processes append
records, create, rename and unlink files, and log each call that returned success to a host file
outside the mount. After each crash: the traced processes are gone (they die with their
tracer), `amino fsck` finds every invariant intact, and everything the log says happened is in
the file system (crashload check; see programs/crashload.c for why that direction is the sound
one). Every iteration must have made progress, so "nothing was committed" cannot pass.

AMINO_MOUNT_CRASHES sets the number of crashes (default 6); --seed repeats a run's timing.
"""

import os
import random
import signal
import sys
import time

import mount_common as mc

WRITERS = 4
MIN_LINES = 40  # acknowledged operations an iteration must log before it is killed


def extra(p):
    p.add_argument("--seed", type=int, help="seed of the kill delays (default: random)")
    p.add_argument("--crashes", type=int,
                   default=int(os.environ.get("AMINO_MOUNT_CRASHES", "6")))
    p.add_argument("--durability", default="sync")
    p.add_argument("--early", action="store_true",
                   help="the broken workload that logs appends before making them: the check "
                        "must fail (a negative control)")


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def crash_once(mounts, mp, log, base, durability, delay, early):
    """Runs the workload until it has logged MIN_LINES more operations, waits `delay`, kills the
    monitor. Returns the log lines written by this iteration."""
    before = count_lines(log)
    argv = mc.amino_run(mounts, [mc.prog("crashload"), "run", mp + "/c", log, str(base),
                                 str(WRITERS)] + (["early"] if early else []),
                        durability=durability)
    proc = mc.start(argv, stdout=mc.subprocess.PIPE, stderr=mc.subprocess.PIPE)
    try:
        limit = time.monotonic() + min(30.0, mc.remaining())
        while count_lines(log) < before + MIN_LINES:
            if proc.poll() is not None:
                _, out, err = mc.finish(proc, argv)
                raise mc.Failure("the workload ended before the crash (exit %s):\n%s%s" % (
                    proc.returncode, mc._tail(out), mc._tail(err)))
            if time.monotonic() > limit:
                raise mc.Failure("no progress: %d operations logged in 30 s by %s" % (
                    count_lines(log) - before, " ".join(argv)))
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)  # the monitor alone: its tracees must die with it
        proc.communicate()
        limit = time.monotonic() + 5
        while mc.group_alive(proc.pid):
            if time.monotonic() > limit:
                raise mc.Failure("traced processes %s still run 5 s after the monitor was "
                                 "killed" % mc.group_alive(proc.pid))
            time.sleep(0.02)
    finally:
        mc.kill_group(proc.pid)
    return count_lines(log) - before


def check(mounts, mp, log):
    """crashload check under a fresh monitor; returns (ok, its output)."""
    rc, out, err = mc.run(mc.amino_run(mounts, [mc.prog("crashload"), "check", mp + "/c", log]),
                          "amino run crashload check", check=False)
    return rc == 0, (out + err).strip()


def body(args, scratch):
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    mc.say("seed %d, %d crashes, --durability %s%s" % (seed, args.crashes, args.durability,
                                                       ", early (broken) logging"
                                                       if args.early else ""))
    db, mp = scratch.sub("db"), scratch.sub("mnt")
    log = os.path.join(scratch.path, "acknowledged.log")
    mc.mkfs(db)
    mounts = [(mp, db)]
    for i in range(args.crashes):
        delay = rng.uniform(0, 0.3)
        lines = crash_once(mounts, mp, log, i * WRITERS, args.durability, delay, args.early)
        fsck = mc.fsck(db)
        ok, text = check(mounts, mp, log)
        mc.say("crash %d/%d after %d logged operations (+%.0f ms): fsck: %s; %s" % (
            i + 1, args.crashes, lines, delay * 1000, fsck, text.splitlines()[-1]))
        if not ok:
            raise mc.Failure("after crash %d (seed %d): acknowledged operations are missing:\n%s"
                             % (i + 1, seed, text))


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__, extra))
