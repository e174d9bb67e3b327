"""A host tree with every kind of file goes into an Amino file system and comes back out
unchanged: `amino import`, `amino fsck`, `amino export`, then diff -r and a field-by-field
comparison of everything stat, readlink, getxattr and SEEK_DATA/SEEK_HOLE report."""

import os
import subprocess
import unittest

import clitest
from clitest import run


def cp_a(src, dst):
    """The host's reference for `amino import`/`export` into an existing tree."""
    subprocess.run(["cp", "-a", "--remove-destination", "--", os.path.join(src, "."), dst],
                   check=True)


class RoundTripTest(clitest.TreeTestCase):
    def test_import_fsck_export_gives_the_same_tree(self):
        src = clitest.build_full_tree(self.path("src"))
        before = clitest.snapshot(src)
        # The tree really has what the comparison is meant to cover.
        self.assertEqual(clitest.data_extents(os.path.join(src, b"sizes/sparse")),
                         clitest.SPARSE_EXTENTS)
        self.assertIn([b"links/sub/three_2", b"links/three_1", b"other/three_3"],
                      before[b"<hard link groups>"])

        db = self.mkfs()
        run("import", db, src, check=0)
        self.assertEqual(clitest.snapshot(src), before, "import changed its source")
        fsck = run("fsck", db, check=0)
        self.assertEqual(fsck.stdout.decode().strip(), f"{db}: consistent")

        out = self.path("out")  # missing: export creates it
        run("export", db, out, check=0)
        after = clitest.snapshot(out)
        self.assertEqual(clitest.diff_snapshots(before, after), [])
        self.assertEqual(clitest.data_extents(os.path.join(os.fsencode(out), b"sizes/sparse")),
                         clitest.SPARSE_EXTENTS)
        self.assertEqual(clitest.diff_r(src, out), [])

    def test_export_into_an_existing_tree_replaces_and_merges(self):
        # Linux's own cp -a --remove-destination is the reference for "replace".
        src = self.path("src")
        os.makedirs(os.path.join(src, "dir/sub"))
        clitest.write(os.path.join(src, "dir/file"), b"new content\n")
        os.symlink("dir/file", os.path.join(src, "link"))
        clitest.set_old_times(src)
        db = self.mkfs()
        run("import", db, src, check=0)

        def stale_tree(root):
            os.makedirs(os.path.join(root, "dir/keep"))
            clitest.write(os.path.join(root, "dir/file"), b"old and longer content\n")
            clitest.write(os.path.join(root, "link"), b"a file where the link goes\n")
            clitest.write(os.path.join(root, "dir/keep/untouched"), b"stays\n")
            clitest.set_old_times(root)

        expected, out = self.path("expected"), self.path("out")
        stale_tree(expected)
        stale_tree(out)
        cp_a(src, expected)
        run("export", db, out, check=0)
        self.assertEqual(clitest.diff_snapshots(clitest.snapshot(expected),
                                                clitest.snapshot(out)), [])

    def test_import_over_existing_entries_behaves_like_cp(self):
        first, second = self.path("first"), self.path("second")
        os.makedirs(os.path.join(first, "d/only_first"))
        clitest.write(os.path.join(first, "d/f"), b"first version, longer\n")
        clitest.write(os.path.join(first, "becomes_link"), b"regular file at first\n")
        os.symlink("nowhere", os.path.join(first, "becomes_file"))
        os.makedirs(os.path.join(second, "d/only_second"))
        clitest.write(os.path.join(second, "d/f"), b"second\n", 0o600)
        os.symlink("d/f", os.path.join(second, "becomes_link"))
        clitest.write(os.path.join(second, "becomes_file"), b"now a file\n")
        for tree in (first, second):
            clitest.set_old_times(tree)

        db = self.mkfs()
        run("import", db, first, check=0)
        run("import", db, second, check=0)
        # cp after import: cp's reads would update the sources' access times.
        expected = self.path("expected")
        os.mkdir(expected)
        for tree in (first, second):
            cp_a(tree, expected)
        run("fsck", db, check=0)
        out = self.path("out")
        run("export", db, out, check=0)
        self.assertEqual(clitest.diff_snapshots(clitest.snapshot(expected),
                                                clitest.snapshot(out)), [])

    def test_posix_acls_round_trip(self):
        src = self.path("src")
        os.mkdir(src)
        j = lambda *names: os.path.join(src, *names)
        setfacl = lambda *args: subprocess.run(["setfacl", *args], check=True)
        clitest.write(j("acl"), b"x\n")
        setfacl("-m", "u:1234:r", j("acl"))  # beyond the mode: system.posix_acl_access
        os.mkdir(j("d"))
        setfacl("-d", "-m", "u:1234:rwx,g::r-x", j("d"))  # system.posix_acl_default
        clitest.write(j("d", "inherits"), b"i\n")
        os.mkdir(j("d", "sub"))
        clitest.write(j("d", "plain"), b"p\n")
        setfacl("-b", j("d", "plain"))  # none, although its directory has a default ACL
        access, default = "system.posix_acl_access", "system.posix_acl_default"
        self.assertIn(access, os.listxattr(j("d", "inherits")))
        self.assertEqual(sorted(os.listxattr(j("d", "sub"))), [access, default])
        self.assertEqual(os.listxattr(j("d", "plain")), [])
        before = clitest.snapshot(src)

        db = self.mkfs()
        out = self.path("out")
        # The second time into the same tree, d is there with its default ACL already, and the
        # files made in it take that ACL until the copy sets (or removes) theirs.
        for _ in range(2):
            proc = run("import", db, src, check=0)
            self.assertNotIn("warning", proc.stderr.decode())
            self.assertEqual(run("fsck", db, check=0).stdout.decode().strip(),
                             f"{db}: consistent")
            run("export", db, out, check=0)
            self.assertEqual(clitest.diff_snapshots(before, clitest.snapshot(out)), [])


if __name__ == "__main__":
    unittest.main()
