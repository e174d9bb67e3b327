"""Shared machinery of the Amino mount tests (tests/mount): scratch directories, file systems,
`amino run` with a deadline, and the checks every test ends with.

Environment: AMINO (the amino binary), AMINO_MOUNT_PROGRAMS (the directory of mstress,
crashload and permprobe), AMINO_MOUNT_SCALE (a factor on the amount of work; default 1),
AMINO_MOUNT_RUN_OPTIONS (more `amino run` options for every run, e.g. "--backend ptrace").
A driver takes --deadline SECONDS: no command runs past it, and one that would is killed with
its whole process group and reported as a hang, before ctest's own timeout kills only the driver.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

AMINO = os.environ.get("AMINO", "")
PROGRAMS = os.environ.get("AMINO_MOUNT_PROGRAMS", "")
SCALE = float(os.environ.get("AMINO_MOUNT_SCALE", "1"))
RUN_OPTIONS = os.environ.get("AMINO_MOUNT_RUN_OPTIONS", "").split()


class Failure(Exception):
    """A check failed; the message says which call, on what, and what came back."""


_deadline = [None]
_t0 = time.monotonic()


def parse_args(description, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--deadline", type=float, default=300.0,
                   help="seconds after which any command still running counts as a hang")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    if extra:
        extra(p)
    a = p.parse_args()
    _deadline[0] = _t0 + a.deadline
    for name, value in (("AMINO", AMINO), ("AMINO_MOUNT_PROGRAMS", PROGRAMS)):
        if not value:
            sys.exit("%s is not set (ctest sets it; see tests/mount/CMakeLists.txt)" % name)
    return a


def say(msg):
    sys.stdout.write("[%6.1f s] %s\n" % (time.monotonic() - _t0, msg))
    sys.stdout.flush()


def remaining():
    return max(1.0, _deadline[0] - time.monotonic())


def prog(name):
    return os.path.join(PROGRAMS, name)


class Scratch:
    """A scratch directory every user can traverse (the permission test runs as nobody)."""

    def __init__(self, keep=False):
        self.path = tempfile.mkdtemp(prefix="amino-mount-")
        os.chmod(self.path, 0o755)
        self.keep = keep

    def sub(self, *names, make=True):
        p = os.path.join(self.path, *names)
        if make:
            os.makedirs(p, exist_ok=True)
            os.chmod(p, 0o755)
        return p

    def close(self, ok):
        if self.keep or not ok:
            say("scratch directory kept: %s" % self.path)
        else:
            shutil.rmtree(self.path, ignore_errors=True)


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def start(argv, **kw):
    """Starts argv in a session of its own (its process group is the test's to kill)."""
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, **kw)


def finish(proc, argv, what=None, timeout=None):
    """Waits for a started command; a hang is killed with its group and reported."""
    limit = min(timeout or remaining(), remaining())
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate()
        raise Failure("hang: %s still running after %.0f s\n%s%s" % (
            what or " ".join(argv), limit, _text(out), _text(err)))
    return proc.returncode, _text(out), _text(err)


def run(argv, what=None, timeout=None, check=True):
    """Runs argv to completion; returns (status, stdout, stderr). `check`: status must be 0."""
    proc = start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    rc, out, err = finish(proc, argv, what, timeout)
    if check and rc != 0:
        raise Failure("%s exited %d\n--- stdout\n%s--- stderr\n%s" % (
            what or " ".join(argv), rc, _tail(out), _tail(err)))
    return rc, out, err


def amino_run(mounts, argv, durability=None, extra=()):
    """The `amino run` command line serving `mounts` [(mountpoint, dbdir)]."""
    cmd = [AMINO, "run"]
    for mp, db in mounts:
        cmd += ["--mount", "%s=%s" % (mp, db)]
    if durability:
        cmd += ["--durability", durability]
    return cmd + RUN_OPTIONS + list(extra) + ["--"] + list(argv)


def mkfs(db):
    run([AMINO, "mkfs", db], "amino mkfs %s" % db)


def fsck(db):
    """`amino fsck` must find every invariant intact."""
    rc, out, err = run([AMINO, "fsck", db], "amino fsck", check=False)
    if rc != 0:
        raise Failure("amino fsck %s exited %d:\n%s%s" % (db, rc, _tail(out), _tail(err)))
    return out.strip()


def group_alive(pgid):
    """Pids of the group that are still running (zombies have let go of everything)."""
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(pid))
    return alive


def main(body, description, extra=None):
    """Runs body(args, scratch) and turns the outcome into an exit status."""
    args = parse_args(description, extra)
    scratch = Scratch(args.keep)
    ok = False
    try:
        body(args, scratch)
        ok = True
    except Failure as e:
        say("FAIL: %s" % e)
    finally:
        scratch.close(ok)
    say("PASS" if ok else "FAILED")
    return 0 if ok else 1


def _text(b):
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def _tail(text, n=25):
    lines = text.splitlines()
    return "\n".join(lines[-n:]) + ("\n" if lines else "")
