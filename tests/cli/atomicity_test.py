"""`amino import` is one transaction: when it fails part way through, after many files have
already been copied in, the file system is exactly as it was before (checked by exporting it)
and consistent."""

import os
import unittest

import clitest
from clitest import run


class ImportAtomicityTest(clitest.TreeTestCase):
    def setUp(self):
        super().setUp()
        self.first = self.path("first")
        os.makedirs(os.path.join(self.first, "keep/sub"))
        clitest.write(os.path.join(self.first, "keep/sub/data"), os.urandom(100000))
        clitest.write(os.path.join(self.first, "zz_conflict"), b"a regular file\n")
        os.symlink("keep", os.path.join(self.first, "keep_link"))
        clitest.set_old_times(self.first)
        self.db = self.mkfs()
        run("import", self.db, self.first, check=0)
        self.before = self.export("before")

    def export(self, name):
        out = self.path(name)
        run("export", self.db, out, check=0)
        return clitest.snapshot(out)

    def second_tree(self):
        """Many files and a megabyte of data sorted before anything that fails, and changes to
        entries that exist already: all of it must vanish with the failure."""
        second = self.path("second")
        os.makedirs(os.path.join(second, "aa_many"))
        for i in range(300):
            clitest.write(os.path.join(second, "aa_many", f"file{i:03}"), os.urandom(i * 7))
        clitest.write(os.path.join(second, "ab_big"), os.urandom(1 << 20))
        os.makedirs(os.path.join(second, "keep/sub"))
        clitest.write(os.path.join(second, "keep/sub/data"), b"replaced\n")
        clitest.write(os.path.join(second, "keep_link"), b"was a symbolic link\n")
        os.chmod(second, 0o700)
        return second

    def check_unchanged(self):
        run("fsck", self.db, check=0)
        self.assertEqual(clitest.diff_snapshots(self.before, self.export("after")), [])

    def test_directory_over_a_file_fails_and_changes_nothing(self):
        second = self.second_tree()
        os.makedirs(os.path.join(second, "zz_conflict/inner"))
        proc = run("import", self.db, second, check=1)
        line = self.assertOneLineError(proc, "import")
        self.assertIn(f"{second}/zz_conflict: cannot overwrite non-directory", line)
        self.assertIn("nothing was imported", line)
        self.check_unchanged()

    def test_unreadable_host_path_fails_and_changes_nothing(self):
        # Nested directories whose full path is longer than PATH_MAX (4096 bytes): the host
        # refuses to resolve it, deterministically, after everything before it was copied.
        second = self.second_tree()
        fd = os.open(second, os.O_DIRECTORY)
        for level in range(20):
            name = f"zz_deep{level:02}" + "d" * 240
            os.mkdir(name, dir_fd=fd)
            new = os.open(name, os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
        os.close(fd)
        proc = run("import", self.db, second, check=1)
        line = self.assertOneLineError(proc, "import")
        self.assertIn("File name too long (nothing was imported)", line)
        self.check_unchanged()


if __name__ == "__main__":
    unittest.main()
