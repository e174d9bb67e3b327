"""Shared helpers of the `amino` CLI integration tests: running the binary, building host
trees with every kind of file, and comparing two host trees the way a user would (stat fields,
contents, links, extended attributes, holes)."""

import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

AMINO = os.environ.get("AMINO")


def run(*args, check=None, input=None):
    """Runs `amino ARGS`; returns the CompletedProcess (bytes stdout/stderr).

    check: expected exit status, or None for any. A signal (negative status) always fails."""
    proc = subprocess.run([AMINO, *[os.fsencode(a) for a in args]], input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if proc.returncode < 0:
        raise AssertionError(f"amino {args} killed by signal {-proc.returncode}:\n"
                             f"{proc.stderr.decode(errors='replace')}")
    if check is not None and proc.returncode != check:
        raise AssertionError(
            f"amino {args}: exit {proc.returncode}, expected {check}\n"
            f"stdout: {proc.stdout.decode(errors='replace')}\n"
            f"stderr: {proc.stderr.decode(errors='replace')}")
    return proc


class TreeTestCase(unittest.TestCase):
    """A test with its own scratch directory, removed afterwards."""

    def setUp(self):
        if AMINO is None or not os.access(AMINO, os.X_OK):
            self.fail("set AMINO to the path of the amino binary")
        if os.geteuid() != 0:
            self.fail("these tests create files owned by other users and devices: run as root")
        self.tmp = tempfile.mkdtemp(prefix="amino-cli-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def mkfs(self, name="db"):
        db = self.path(name)
        run("mkfs", db, check=0)
        return db

    def assertOneLineError(self, proc, cmd):
        """The failure is reported as exactly one line `amino CMD: ...` on stderr."""
        lines = proc.stderr.decode(errors="replace").splitlines()
        self.assertEqual(len(lines), 1, f"stderr: {lines}")
        self.assertTrue(lines[0].startswith(f"amino {cmd}: "), lines[0])
        return lines[0]


# ---------------------------------------------------------------------------------------------
# Building host trees


def write(path, data, mode=0o644):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)


def make_sparse(path):
    """A 512 KiB file with data only at [64 KiB, 72 KiB) and [192 KiB, 196 KiB): holes at the
    start, in the middle and at the end."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.pwrite(fd, os.urandom(8192), 64 * 1024)
        os.pwrite(fd, os.urandom(4096), 192 * 1024)
        os.ftruncate(fd, 512 * 1024)
        os.fsync(fd)  # settle delayed allocation so SEEK_DATA sees the final layout
    finally:
        os.close(fd)


SPARSE_EXTENTS = [(64 * 1024, 72 * 1024), (192 * 1024, 196 * 1024)]


def byte_names():
    """Names that together use every byte value except NUL and '/'."""
    all_bytes = bytes(b for b in range(1, 256) if b != ord("/"))
    return [all_bytes[i:i + 64] for i in range(0, len(all_bytes), 64)]


LONG_NAME = b"L" * 200 + "é".encode() * 27 + b"x"  # 255 bytes
assert len(LONG_NAME) == 255

XATTR_VALUE = bytes(range(256)) * 2  # binary, with NUL bytes


def build_full_tree(root):
    """Every kind of entry import and export must carry over. Returns the root (bytes)."""
    root = os.fsencode(root)
    j = lambda *p: os.path.join(root, *[os.fsencode(x) for x in p])  # noqa: E731
    os.makedirs(root, exist_ok=True)
    for d in ["a/b/c", "a/empty", "empty", "sizes", "links/sub", "other", "sym", "names",
              "modes", "owners", "special", "xattrs/dir"]:
        os.makedirs(j(d), exist_ok=True)
    write(j("a/b/c/deep.txt"), b"deep\n")
    write(j("a/top.txt"), b"top\n")
    for n in [0, 1, 4095, 4096, 4097]:
        write(j(f"sizes/size_{n}"), os.urandom(n))
    write(j("sizes/random_1MiB"), os.urandom(1 << 20))
    make_sparse(j("sizes/sparse"))

    write(j("links/two_a"), b"two names\n")
    os.link(j("links/two_a"), j("other/two_b"))
    write(j("links/three_1"), os.urandom(5000))
    os.link(j("links/three_1"), j("links/sub/three_2"))
    os.link(j("links/three_1"), j("other/three_3"))

    os.symlink(b"../sizes/size_1", j("sym/relative"))
    os.symlink(b"/etc/hostname", j("sym/absolute"))
    os.symlink(b"does/not/exist", j("sym/dangling"))
    os.symlink(b"../a/b", j("sym/to_dir"))

    for name in byte_names():
        write(os.path.join(j("names"), name), name)
    write(os.path.join(j("names"), LONG_NAME), b"long name\n")
    os.mkdir(os.path.join(j("names"), b"dir \n\t\\ \xff\xfe"))

    write(j("modes/setuid"), b"#!/bin/sh\n", 0o4755)
    write(j("modes/setgid"), b"#!/bin/sh\n", 0o2711)
    write(j("modes/zero"), b"nobody may read this\n", 0)
    os.mkdir(j("modes/sticky"))
    os.chmod(j("modes/sticky"), 0o1777)
    os.mkdir(j("modes/closed"))
    write(j("modes/closed/inside"), b"inside\n", 0o600)
    os.chmod(j("modes/closed"), 0)
    os.mkdir(j("modes/setgid_dir"))
    os.chmod(j("modes/setgid_dir"), 0o2775)

    write(j("owners/file"), b"owned\n", 0o640)
    os.chown(j("owners/file"), 1234, 5678)
    os.mkdir(j("owners/dir"))
    os.chown(j("owners/dir"), 1234, 5678)
    os.symlink(b"file", j("owners/link"))
    os.chown(j("owners/link"), 1234, 5678, follow_symlinks=False)
    write(j("owners/exec"), b"#!/bin/sh\n", 0o755)
    os.chown(j("owners/exec"), 1234, 5678)
    os.chmod(j("owners/exec"), 0o6755)  # set-ID bits after chown, which clears them

    os.mkfifo(j("special/fifo"), 0o640)
    os.mknod(j("special/null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
    import socket
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(j("special/socket"))
    finally:
        s.close()

    write(j("xattrs/file"), b"has attributes\n")
    os.setxattr(j("xattrs/file"), b"user.binary", XATTR_VALUE)
    os.setxattr(j("xattrs/file"), b"user.empty", b"")
    os.setxattr(j("xattrs/file"), b"trusted.admin", b"root only")
    os.setxattr(j("xattrs/dir"), b"user.on_dir", b"\x00\x01dir")

    set_old_times(root)
    return root


def set_old_times(root):
    """Distinct explicit nanosecond times on every entry, children before their directory."""
    n = 0
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames + dirnames:
            n += 1
            p = os.path.join(dirpath, name)
            os.utime(p, ns=(1_500_000_000_000_000_000 + n * 1_000_003_001,
                            1_000_000_000_123_456_789 + n * 7_000_001_003),
                     follow_symlinks=False)
    os.utime(root, ns=(1_600_000_000_000_000_001, 1_200_000_000_000_000_002))


# ---------------------------------------------------------------------------------------------
# Comparing host trees


def data_extents(path):
    """[(begin, end)] of the data regions of a regular file, by SEEK_DATA/SEEK_HOLE."""
    fd = os.open(path, os.O_RDONLY | os.O_NOATIME)
    try:
        size = os.fstat(fd).st_size
        out, off = [], 0
        while off < size:
            try:
                data = os.lseek(fd, off, os.SEEK_DATA)
            except OSError as e:
                if e.errno == 6:  # ENXIO: only a hole remains
                    break
                raise
            hole = min(os.lseek(fd, data, os.SEEK_HOLE), size)
            out.append((data, hole))
            off = hole
        return out
    finally:
        os.close(fd)


def read_noatime(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOATIME)
    try:
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def snapshot(root):
    """Everything a user can observe of a tree, keyed by path relative to the root (bytes):
    stat fields, contents, link targets, extended attributes, data extents, and which paths
    are names of the same file. The stat of every entry is taken before any file is read."""
    root = os.fsencode(root)
    stats = {b".": os.lstat(root)}  # keys are bytes: names need not be UTF-8
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            stats[os.path.relpath(p, root)] = os.lstat(p)
    entries, inodes = {}, {}
    for rel, st in stats.items():
        p = os.path.join(root, rel)
        e = {"mode": stat.filemode(st.st_mode) + oct(st.st_mode), "uid": st.st_uid,
             "gid": st.st_gid, "nlink": st.st_nlink, "mtime_ns": st.st_mtime_ns}
        if not stat.S_ISDIR(st.st_mode):
            e["size"] = st.st_size  # a directory's size is the file system's business
        if stat.S_ISREG(st.st_mode):
            e["atime_ns"] = st.st_atime_ns
            e["data"] = read_noatime(p)
            e["extents"] = data_extents(p)
        if stat.S_ISLNK(st.st_mode):
            e["target"] = os.readlink(p)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            e["rdev"] = st.st_rdev
        e["xattrs"] = {n: os.getxattr(p, n, follow_symlinks=False)
                       for n in sorted(os.listxattr(p, follow_symlinks=False))}
        entries[rel] = e
        if not stat.S_ISDIR(st.st_mode):
            inodes.setdefault(st.st_ino, []).append(rel)
    entries[b"<hard link groups>"] = sorted(sorted(g) for g in inodes.values() if len(g) > 1)
    return entries


def diff_snapshots(a, b):
    """Human-readable differences between two snapshots ([] when equal)."""
    out = []
    for rel in sorted(set(a) | set(b)):
        if rel not in a or rel not in b:
            out.append(f"{rel!r}: only in {'first' if rel in a else 'second'}")
            continue
        ea, eb = a[rel], b[rel]
        if isinstance(ea, list) or isinstance(eb, list):
            if ea != eb:
                out.append(f"{rel}: {ea} != {eb}")
            continue
        for k in sorted(set(ea) | set(eb)):
            va, vb = ea.get(k), eb.get(k)
            if va != vb:
                if k == "data":
                    va, vb = f"<{len(va or b'')} bytes>", f"<{len(vb or b'')} bytes, differ>"
                out.append(f"{rel!r}: {k}: {va!r} != {vb!r}")
    return out


def diff_r(a, b):
    """`diff -r --no-dereference A B`; returns its output lines except the notes on special
    files of the same kind: diff does not compare FIFOs and sockets at all, and compares devices
    by their whole stat including ctime, which a copy cannot keep. The snapshot compares them."""
    proc = subprocess.run(["diff", "-r", "--no-dereference", a, b], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    same_kind = re.compile(
        rb"^File .* is a (fifo|socket|character special file|block special file) while file .* "
        rb"is a \1$")
    lines = [line for line in proc.stdout.splitlines() if not same_kind.match(line)]
    if proc.returncode not in (0, 1):
        lines.append(f"diff exited with {proc.returncode}".encode())
    return lines
