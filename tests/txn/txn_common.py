"""Shared machinery of the application-transaction tests (tests/txn), on top of the mount tests'
(tests/mount/mount_common.py: scratch directories, `amino run` with a deadline, fsck).

Environment: AMINO (the amino binary), AMINO_TXN_PROGRAMS (the directory of the C programs),
AMINO_LIBAMINO (libamino.so, for the ctypes test), AMINO_TXN_SCALE (a factor on the amount of
work; default 1), AMINO_MOUNT_RUN_OPTIONS (more `amino run` options for every run).
"""

import os
import stat
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mount"))
# mount_common reads its program directory at import; these tests bring their own programs.
os.environ["AMINO_MOUNT_PROGRAMS"] = os.environ.get("AMINO_TXN_PROGRAMS", "")

import mount_common as mc  # noqa: E402  (after the path and environment above)

Failure = mc.Failure
say = mc.say
SCALE = float(os.environ.get("AMINO_TXN_SCALE", "1"))
LIBAMINO = os.environ.get("AMINO_LIBAMINO", "")


def scaled(n, least=1):
    return max(least, int(n * SCALE))


class Fs:
    """A fresh Amino file system (database and mount point) in the scratch directory."""

    def __init__(self, scratch, name):
        self.db = scratch.sub(name, "db")
        self.mp = scratch.sub(name, "mnt")
        self.scratch = scratch
        self.name = name
        self.exports = 0
        mc.mkfs(self.db)

    def path(self, *names):
        return os.path.join(self.mp, *names)

    def argv(self, argv, extra=(), durability=None, more_mounts=()):
        return mc.amino_run([(self.mp, self.db)] + list(more_mounts), argv, durability, extra)

    def run(self, argv, what=None, check=True, extra=(), durability=None, more_mounts=(),
            timeout=None):
        """`amino run` of argv serving this file system; returns (status, stdout, stderr)."""
        return mc.run(self.argv(argv, extra, durability, more_mounts), what or " ".join(argv),
                      timeout=timeout, check=check)

    def tree(self):
        """The whole file system as `amino export` copies it out (see snapshot())."""
        self.exports += 1
        out = self.scratch.sub(self.name, "export%d" % self.exports, make=False)
        mc.run([mc.AMINO, "export", self.db, out], "amino export %s" % self.db)
        return snapshot(out)

    def fsck(self, when):
        result = mc.fsck(self.db)
        say("amino fsck after %s: %s" % (when, result or "clean"))


def snapshot(root):
    """{relative path: {field: value}} of every entry under root (root itself is '.'):
    type, mode, owner, link count, mtime, and the bytes of files or the target of links."""
    tree = {".": _entry(root)}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(base, name)
            tree[os.path.relpath(p, root)] = _entry(p)
    return tree


def _entry(p):
    st = os.lstat(p)
    e = {"type": stat.S_IFMT(st.st_mode), "mode": oct(stat.S_IMODE(st.st_mode)),
         "owner": (st.st_uid, st.st_gid), "nlink": st.st_nlink, "mtime": st.st_mtime_ns}
    if stat.S_ISREG(st.st_mode):
        with open(p, "rb") as f:
            e["data"] = f.read()
    elif stat.S_ISLNK(st.st_mode):
        e["data"] = os.readlink(p)
    if stat.S_ISDIR(st.st_mode):
        e["nlink"] = None  # directories' link counts are the host's business
    return e


def subtree(tree, top):
    """The part of a snapshot under directory `top`, with paths relative to it."""
    out = {}
    for path, e in tree.items():
        if path == top:
            out["."] = e
        elif path.startswith(top + "/"):
            out[path[len(top) + 1:]] = e
    return out


def differences(a, b, fields=("type", "mode", "owner", "nlink", "mtime", "data")):
    """Human-readable differences between two snapshots, on the given fields."""
    out = []
    for path in sorted(set(a) | set(b)):
        if path not in a:
            out.append("%s: only in the second (%s)" % (path, _brief(b[path])))
        elif path not in b:
            out.append("%s: only in the first (%s)" % (path, _brief(a[path])))
        else:
            for f in fields:
                if a[path].get(f) != b[path].get(f):
                    out.append("%s: %s %r != %r" % (path, f, _short(a[path].get(f)),
                                                    _short(b[path].get(f))))
    return out


def expect_same(a, b, what, fields=("type", "mode", "owner", "nlink", "mtime", "data")):
    diffs = differences(a, b, fields)
    if diffs:
        raise Failure("%s: %d difference(s):\n  %s" % (what, len(diffs), "\n  ".join(diffs[:30])))


def _brief(e):
    return "mode %s, %s" % (e["mode"], _short(e.get("data")))


def _short(v):
    if isinstance(v, bytes) and len(v) > 40:
        return v[:40] + b"..."
    return v


def main(body, description, extra=None):
    if not os.environ.get("AMINO_TXN_PROGRAMS"):
        sys.exit("AMINO_TXN_PROGRAMS is not set (ctest sets it; see tests/txn/CMakeLists.txt)")
    return mc.main(body, description, extra)
