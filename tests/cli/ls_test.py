"""`amino ls` prints what `ls -l` would for the same tree: mode strings, link counts, owner
and group names (numbers when unknown), sizes (major, minor for devices), mtimes, names,
link targets; directories sorted by name; -R descends."""

import grp
import os
import pwd
import re
import stat
import time
import unittest

import clitest
from clitest import run


def owner(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def group(gid):
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def row(path, name):
    """The fields of PATH's line; a directory's size is the file system's own (None)."""
    st = os.lstat(path)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        size = f"{os.major(st.st_rdev)}, {os.minor(st.st_rdev)}"
    else:
        size = None if stat.S_ISDIR(st.st_mode) else str(st.st_size)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime_ns // 10**9))
    if stat.S_ISLNK(st.st_mode):
        name += " -> " + os.readlink(path)
    return (stat.filemode(st.st_mode), str(st.st_nlink), owner(st.st_uid), group(st.st_gid),
            size, when, name)


LINE = re.compile(r"^(\S{10}) +(\d+) (\S+) +(\S+) +(\d+, +\d+|\d+) "
                  r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (.*)$")


def expected_listing(root, rel="", recursive=False):
    """Lines of `amino ls [-R] DB /REL` for the host tree at ROOT: strings for headers and
    blank lines, None for "total" lines (block counts are the file system's own), and a list
    of row fields for each block of entries."""
    host = os.path.join(root, rel)
    names = sorted(os.listdir(host), key=os.fsencode)
    lines = [f"/{rel}:"] if recursive else []
    lines.append(None)
    lines.append([row(os.path.join(host, n), n) for n in names])
    if recursive:
        for n in names:
            if stat.S_ISDIR(os.lstat(os.path.join(host, n)).st_mode):
                lines.append("")
                lines += expected_listing(root, os.path.join(rel, n), True)
    return lines


class LsTest(clitest.TreeTestCase):
    def setUp(self):
        super().setUp()
        self.src = self.path("src")
        j = lambda p: os.path.join(self.src, p)  # noqa: E731
        os.makedirs(j("dir/sub"))
        os.makedirs(j("empty"))
        clitest.write(j("dir/file"), b"12345", 0o640)
        clitest.write(j("dir/sub/x"), b"", 0o4755)
        clitest.write(j("zero"), b"z", 0)
        os.link(j("zero"), j("dir/zero_link"))
        os.symlink("dir/file", j("link"))
        os.chmod(j("empty"), 0o1777)
        os.mkfifo(j("fifo"), 0o600)
        os.mknod(j("null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
        os.chmod(j("null"), 0o666)  # mknod applies the umask
        os.chown(j("dir/file"), 1234, 5678)
        os.chown(j("link"), 0, 5678, follow_symlinks=False)
        clitest.set_old_times(self.src)
        self.db = self.mkfs()
        run("import", self.db, self.src, check=0)

    def check(self, got, expected):
        got = got.decode().splitlines()
        text = "\n".join(got)
        for e in expected:
            if e is None:
                self.assertRegex(got.pop(0), r"^total \d+$")
            elif isinstance(e, str):
                self.assertEqual(got.pop(0), e, text)
            else:
                block, got = got[:len(e)], got[len(e):]
                self.assertEqual(len(block), len(e), text)
                for line, fields in zip(block, e):
                    m = LINE.match(line)
                    self.assertIsNotNone(m, line)
                    found = m.groups()
                    if fields[4] is None:  # a directory: any size
                        found = found[:4] + (None,) + found[5:]
                    self.assertEqual(found, fields, text)
                # Columns line up: every line's date starts at the same column.
                self.assertLessEqual(len({LINE.match(l).start(6) for l in block}), 1, text)
        self.assertEqual(got, [], text)

    def test_lists_a_directory_sorted(self):
        self.check(run("ls", self.db, check=0).stdout, expected_listing(self.src))
        self.check(run("ls", self.db, "/dir", check=0).stdout, expected_listing(self.src, "dir"))

    def test_recursive(self):
        self.check(run("ls", "-R", self.db, check=0).stdout,
                   expected_listing(self.src, recursive=True))
        self.check(run("ls", "--recursive", self.db, "/dir", check=0).stdout,
                   expected_listing(self.src, "dir", recursive=True))

    def test_a_file_or_link_lists_itself(self):
        for p in ["dir/file", "link", "null", "fifo"]:
            self.check(run("ls", self.db, "/" + p, check=0).stdout,
                       [[row(os.path.join(self.src, p), "/" + p)]])

    def test_mode_strings(self):
        out = run("ls", "-R", self.db, check=0).stdout.decode()
        for mode, name in [("-rwsr-xr-x", " x"), ("----------", " zero"), ("drwxrwxrwt", " empty"),
                           ("prw-------", " fifo"), ("crw-rw-rw-", " null"),
                           ("lrwxrwxrwx", " link -> dir/file")]:
            self.assertTrue(any(l.startswith(mode) and l.endswith(name) for l in out.splitlines()),
                            f"no {mode} ...{name} in\n{out}")

    def test_unprintable_names_are_escaped(self):
        src = self.path("names")
        os.mkdir(src)
        clitest.write(os.path.join(src, "line\nbreak"), b"")
        clitest.write(os.path.join(os.fsencode(src), b"bad\xffutf8 \\ \x01"), b"")
        clitest.write(os.path.join(src, "ünïcode"), b"")
        run("import", self.db, src, check=0)
        out = run("ls", self.db, check=0).stdout.decode()
        names = [l.split(" ")[-1] for l in out.splitlines()[1:] if " -> " not in l]
        self.assertIn("line\\nbreak", names)
        self.assertIn("ünïcode", names)
        self.assertTrue(any(l.endswith(" bad\\377utf8 \\\\ \\001") for l in out.splitlines()), out)

    def test_errors(self):
        proc = run("ls", self.db, "/missing", check=1)
        self.assertEqual(self.assertOneLineError(proc, "ls"),
                         "amino ls: /missing: No such file or directory")
        self.assertOneLineError(run("ls", self.db, "relative", check=2), "ls")
        self.assertOneLineError(run("ls", self.db, "/dir/file/below", check=1), "ls")


if __name__ == "__main__":
    unittest.main()
