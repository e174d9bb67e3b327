#!/usr/bin/env python3
"""Negative controls: each checker of the mount tests, given a deliberately broken workload or
file system, must report a failure within a bounded number of trials. A checker that cannot fail
proves nothing.

  lost updates   appenders that write at fstat's size instead of O_APPEND (a read-modify-write
                 race), natively and on an Amino mount: mstress verify must find missing records
  early logging  the crash workload that logs appends before making them, with the monitor
                 killed as in crash_test.py: crashload check must find an acknowledged append
                 missing
  lost commit    a correct crash run, then one acknowledged record cut off and one acknowledged
                 file removed by hand: crashload check must say so
  permissions    the comparison of permprobe results, given a root run and an unprivileged one,
                 must report differences
"""

import os
import shutil
import sys
import time

import crash_test
import mount_common as mc
import permissions_test

FILES = 4


def racy_round(scratch, name, mounts, d, n):
    """One racy stress run and verify; returns the verify failure text ('' if it passed)."""
    wrap = (lambda argv: mc.amino_run(mounts, argv)) if mounts else (lambda argv: argv)
    mc.run(wrap([mc.prog("mstress"), "setup", d, str(FILES)]), name + " setup")
    mc.run(wrap([mc.prog("mstress"), "stress", d, str(FILES), "8", "2", str(n), "0", "1000000",
                 "racy"]), name + " racy stress")
    rc, out, err = mc.run(wrap([mc.prog("mstress"), "verify", d, str(FILES), "0", "8", str(n)]),
                          name + " verify", check=False)
    return (err.strip().splitlines() or ["?"])[-1] if rc != 0 else ""


def control(name, trials, attempt):
    for i in range(trials):
        caught = attempt(i)
        if caught:
            mc.say("%s: caught in trial %d: %s" % (name, i + 1, caught))
            return
    raise mc.Failure("%s: the checker passed a broken run %d times in a row" % (name, trials))


def body(args, scratch):
    control("lost updates (native)", 3, lambda i: racy_round(
        scratch, "native", None, scratch.sub("native%d" % i, make=False), 2000))

    def amino_racy(i):
        db, mp = scratch.sub("rdb%d" % i), scratch.sub("rmnt%d" % i)
        mc.mkfs(db)
        return racy_round(scratch, "amino", [(mp, db)], mp + "/d", 150)
    control("lost updates (Amino mount)", 3, amino_racy)

    db, mp = scratch.sub("edb"), scratch.sub("emnt")
    log = os.path.join(scratch.path, "early.log")
    mc.mkfs(db)
    mounts = [(mp, db)]

    def early(i):
        crash_test.crash_once(mounts, mp, log, i * crash_test.WRITERS, "sync", 0.05 * i, True)
        ok, text = crash_test.check(mounts, mp, log)
        return "" if ok else text.splitlines()[0]
    control("early logging (Amino mount, monitor killed)", 10, early)

    # A correct run, natively (the checker is the same program), then the file system edited.
    host = scratch.sub("lost")
    log = os.path.join(scratch.path, "lost.log")
    proc = mc.start([mc.prog("crashload"), "run", host, log, "0", "2"])
    while crash_test.count_lines(log) < 100:
        if proc.poll() is not None:
            raise mc.Failure("native crashload ended early with status %s" % proc.returncode)
        time.sleep(0.01)
    mc.kill_group(proc.pid)
    proc.wait()
    # The writers die on their own time: one may still finish the rename it was making.
    deadline = time.monotonic() + 10
    while mc.group_alive(proc.pid):
        if time.monotonic() > deadline:
            raise mc.Failure("native crashload writers still alive 10 s after SIGKILL")
        time.sleep(0.01)
    ok, text = check_native(host, log)
    if not ok:
        raise mc.Failure("native crashload check failed on a correct run:\n" + text)
    # The busiest writer loses its last two acknowledged records, then the newest file its log
    # says was renamed into place (and not unlinked since).
    with open(log) as f:
        words = [line.split() for line in f]
    busiest = max({w[1] for w in words}, key=lambda x: sum(1 for w in words if w[1] == x))
    with open(os.path.join(host, "log." + busiest), "r+b") as f:
        f.truncate(os.path.getsize(f.name) - 64 * 2)
    ok, text = check_native(host, log)
    if ok:
        raise mc.Failure("lost commit: crashload check passed with two acknowledged records cut")
    mc.say("lost commit (records cut): caught: %s" % text.splitlines()[0])
    placed = {int(w[2]) for w in words if w[:2] == ["N", busiest]}
    placed -= {int(w[2]) for w in words if w[:2] == ["U", busiest]}
    victim = "n.%s.%d" % (busiest, max(placed))
    os.unlink(os.path.join(host, victim))
    ok, text = check_native(host, log)
    said = [line for line in text.splitlines() if victim + ":" in line]
    if ok or not said:
        raise mc.Failure("lost commit: crashload check did not notice %s removed:\n%s" % (
            victim, text))
    mc.say("lost commit (%s removed): caught: %s" % (victim, said[0]))

    probe = os.path.join(scratch.sub("bin"), "permprobe")
    shutil.copy(mc.prog("permprobe"), probe)
    os.chmod(probe, 0o755)
    root_dir, user_dir = scratch.sub("proot"), scratch.sub("puser")
    for d in (root_dir, user_dir):
        mc.run([probe, "setup", d], "permprobe setup")
    _, as_root, _ = mc.run([probe, "probe", root_dir], "permprobe probe as root")
    _, as_user, _ = mc.run([shutil.which("setpriv"), "--reuid=65534", "--regid=65534",
                            "--clear-groups", probe, "probe", user_dir],
                           "permprobe probe as 65534")
    try:
        permissions_test.compare("control", as_user, as_root)
    except mc.Failure as e:
        mc.say("permissions: root and unprivileged results differ, as they must (%s)" %
               str(e).splitlines()[0])
    else:
        raise mc.Failure("permissions: the comparison found no difference between root and "
                         "uid 65534")


def check_native(host, log):
    rc, out, err = mc.run([mc.prog("crashload"), "check", host, log], "crashload check",
                          check=False)
    return rc == 0, (out + err).strip()


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__))
