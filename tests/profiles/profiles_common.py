"""Shared machinery of the transaction-profile tests (tests/profiles), on top of the mount
tests' (tests/mount/mount_common.py: scratch directories, `amino run` with a deadline, fsck).

Environment: AMINO (the amino binary), AMINO_MOUNT_RUN_OPTIONS (more `amino run` options).
Every driver takes --backend (notify, seccomp, ptrace; default: amino's choice).
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))

# mount_common checks its program directory; these tests run only real programs.
os.environ.setdefault("AMINO_MOUNT_PROGRAMS", os.path.dirname(os.path.abspath(__file__)))

import mount_common as mc  # noqa: E402  (after the path and environment above)

Failure = mc.Failure
say = mc.say


def backend_option(p):
    p.add_argument("--backend", default=None, help="amino run --backend")


class Fs:
    """A fresh Amino file system in the scratch directory, run under profiles."""

    def __init__(self, scratch, name, backend=None):
        self.db = scratch.sub(name, "db")
        self.mp = scratch.sub(name, "mnt")
        self.scratch = scratch
        self.name = name
        self.backend = backend
        self.exports = 0
        mc.mkfs(self.db)

    def path(self, *names):
        return os.path.join(self.mp, *names)

    def argv(self, argv, profiles=(), extra=()):
        opts = []
        if self.backend:
            opts += ["--backend", self.backend]
        for p in profiles:
            opts += ["--profile", p]
        return mc.amino_run([(self.mp, self.db)], argv, None, opts + list(extra))

    def run(self, argv, profiles=(), extra=(), check=True, what=None):
        return mc.run(self.argv(argv, profiles, extra), what or " ".join(argv), check=check)

    def files(self, sub="."):
        """{path relative to sub: bytes} of the regular files under sub, as `amino export`
        copies the file system out (what is committed, seen from outside)."""
        self.exports += 1
        out = self.scratch.sub(self.name, "export%d" % self.exports, make=False)
        mc.run([mc.AMINO, "export", self.db, out], "amino export %s" % self.db)
        root = os.path.join(out, sub)
        found = {}
        for base, _, names in os.walk(root):
            for n in names:
                p = os.path.join(base, n)
                with open(p, "rb") as f:
                    found[os.path.relpath(p, root)] = f.read()
        return found

    def fsck(self, when):
        result = mc.fsck(self.db)
        say("amino fsck after %s: %s" % (when, result or "clean"))


def wait_for(predicate, what, limit=30.0):
    """Polls predicate() until true; a Failure after `limit` seconds."""
    end = time.monotonic() + min(limit, mc.remaining())
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.02)
    raise Failure("timed out waiting for %s" % what)


def children(pid):
    """The pids of pid's child processes (every thread's children)."""
    kids = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids += [int(k) for k in f.read().split()]
        except OSError:
            pass
    return kids


def file_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""
