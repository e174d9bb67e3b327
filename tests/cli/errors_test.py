"""The CLI's failures: one clear line on stderr, a non-zero exit status (2 for usage errors and
databases that cannot be opened), never a crash, and nothing changed that should not be."""

import hashlib
import os
import shutil
import unittest

import clitest
from clitest import run

SUBCOMMANDS = ["mkfs", "fsck", "recover", "ls", "import", "export"]


def digest_dir(d):
    """Name -> SHA-256 of every regular file in D (not recursive)."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            with open(p, "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


class HelpAndUsageTest(clitest.TreeTestCase):
    def test_help_everywhere(self):
        out = run("--help", check=0).stdout.decode()
        listed = out.split("Subcommands:\n", 1)[1].splitlines()
        listed = [line.split()[0] for line in listed if line.startswith("  ")]
        self.assertLessEqual(set(SUBCOMMANDS), set(listed))
        for cmd in listed:
            sub = run(cmd, "--help", check=0).stdout.decode()
            self.assertIn(f"Usage: amino {cmd}", sub)
            if cmd in SUBCOMMANDS:
                self.assertIn("DBDIR", sub, cmd)

    def test_version(self):
        self.assertRegex(run("--version", check=0).stdout.decode(), r"^amino \d+\.\d+\.\d+\n$")

    def test_usage_errors_exit_2(self):
        for args in [[], ["bogus"], ["ls"], ["mkfs"], ["import", self.tmp], ["fsck", "a", "b"],
                     ["ls", "--no-such-flag", self.tmp]]:
            proc = run(*args, check=2)
            self.assertTrue(proc.stderr.startswith(b"amino"), (args, proc.stderr))
            self.assertEqual(len(proc.stderr.splitlines()), 1, (args, proc.stderr))

    def test_an_unknown_first_word_is_named(self):
        for args, expected in [
                (["runn", "--", "true"], "amino: unknown subcommand 'runn' (did you mean 'run'?)"),
                (["fsk", self.tmp], "amino: unknown subcommand 'fsk' (did you mean 'fsck'?)"),
                (["frobnicate"], "amino: unknown subcommand 'frobnicate'"),
                (["--bogus"], "amino: unknown option '--bogus'")]:
            proc = run(*args, check=2)
            self.assertEqual(proc.stderr.decode().strip(),
                             expected + " (see 'amino --help')", args)


class MissingAndForeignDirectoriesTest(clitest.TreeTestCase):
    def host(self):
        """A small host tree to import."""
        h = self.path("host")
        os.makedirs(h, exist_ok=True)
        clitest.write(os.path.join(h, "file"), b"data\n")
        return h

    def test_missing_database(self):
        missing = self.path("missing")
        for cmd, extra in [("fsck", []), ("ls", []), ("export", [self.path("out")]),
                           ("import", [self.host()]), ("recover", [])]:
            proc = run(cmd, missing, *extra, check=2)
            self.assertEqual(self.assertOneLineError(proc, cmd),
                             f"amino {cmd}: {missing}: No such file or directory")
        self.assertFalse(os.path.exists(self.path("out")))
        self.assertFalse(os.path.exists(missing))

    def test_mkfs_refuses_a_non_empty_directory(self):
        d = self.path("busy")
        os.mkdir(d)
        clitest.write(os.path.join(d, "precious"), b"keep me\n")
        self.assertOneLineError(run("mkfs", d, check=1), "mkfs")
        self.assertEqual(os.listdir(d), ["precious"])
        db = self.mkfs()
        self.assertOneLineError(run("mkfs", db, check=1), "mkfs")  # not over a database either
        run("fsck", db, check=0)

    def test_directory_of_garbage(self):
        d = self.path("garbage")
        os.mkdir(d)
        for i in range(5):
            clitest.write(os.path.join(d, f"junk{i}"), os.urandom(1000 * i))
        before = digest_dir(d)
        for cmd, extra in [("fsck", []), ("ls", []), ("export", [self.path("out")]),
                           ("import", [self.host()]), ("recover", [])]:
            self.assertOneLineError(run(cmd, d, *extra, check=2), cmd)
        self.assertEqual(digest_dir(d), before)  # nothing written into a foreign directory

    def test_database_files_full_of_garbage(self):
        db = self.mkfs()
        for name in os.listdir(db):
            p = os.path.join(db, name)
            if os.path.isfile(p) and os.path.getsize(p) > 0:
                clitest.write(p, os.urandom(os.path.getsize(p)))
        for cmd, extra in [("fsck", []), ("ls", []), ("export", [self.path("out")])]:
            self.assertOneLineError(run(cmd, db, *extra, check=2), cmd)

    def test_import_of_a_missing_host_directory(self):
        db = self.mkfs()
        missing = self.path("no_such_tree")
        proc = run("import", db, missing, check=1)
        self.assertEqual(self.assertOneLineError(proc, "import"),
                         f"amino import: {missing}: No such file or directory")
        run("fsck", db, check=0)

    def test_no_copy_into_the_database_itself(self):
        db = self.mkfs()
        files = sorted(os.listdir(db))
        self.assertOneLineError(run("import", db, self.tmp, check=1), "import")
        self.assertOneLineError(run("import", db, db, check=1), "import")
        self.assertOneLineError(run("export", db, db, check=1), "export")
        self.assertOneLineError(run("export", db, os.path.join(db, "sub"), check=1), "export")
        self.assertEqual(sorted(os.listdir(db)), files)
        self.assertEqual(run("ls", db, check=0).stdout, b"total 0\n")
        run("fsck", db, check=0)

    def test_export_below_a_missing_directory(self):
        db = self.mkfs()
        self.assertOneLineError(run("export", db, self.path("a/b/c"), check=1), "export")


class DamagedDatabaseTest(clitest.TreeTestCase):
    """A copy of a real database, damaged; the original must stay intact."""

    def setUp(self):
        super().setUp()
        self.src = self.path("src")
        os.makedirs(os.path.join(self.src, "d"))
        for i in range(40):
            clitest.write(os.path.join(self.src, "d", f"f{i}"), os.urandom(20000 + i * 997))
        self.db = self.mkfs()
        run("import", self.db, self.src, check=0)

    def damaged_copy(self, damage, name="data.db"):
        copy = self.path("copy")
        # The database and its log, as a backup would copy them; the environment's region files
        # (__db.*) are the shared memory of running processes, not part of the data.
        shutil.copytree(self.db, copy, ignore=shutil.ignore_patterns("__db.*", "amino.lock"))
        self.original = digest_dir(self.db)
        damaged = os.path.join(copy, name)
        self.assertTrue(os.path.isfile(damaged))
        damage(damaged, os.path.getsize(damaged))
        return copy

    def check_fails_cleanly(self, copy):
        proc = run("fsck", copy)
        self.assertIn(proc.returncode, (1, 2), proc)
        lines = proc.stderr.decode(errors="replace").splitlines()
        self.assertTrue(lines and all(l.startswith("amino fsck: ") for l in lines), lines)
        for cmd, extra in [("ls", ["-R"]), ("export", [self.path("out")])]:
            proc = run(cmd, *extra, copy) if cmd == "ls" else run(cmd, copy, *extra)
            if cmd == "ls" and proc.returncode == 0:
                # A listing needs no file's bytes, and file records are not in data.db: where
                # the damage spared what it reads, it shows the truth.
                pristine = self.path("pristine")
                shutil.rmtree(pristine, ignore_errors=True)
                shutil.copytree(self.db, pristine,
                                ignore=shutil.ignore_patterns("__db.*", "amino.lock"))
                self.assertEqual(proc.stdout, run("ls", "-R", pristine, check=0).stdout)
                continue
            self.assertNotEqual(proc.returncode, 0, cmd)
            self.assertOneLineError(proc, cmd)
        self.assertEqual(digest_dir(self.db), self.original)
        run("fsck", self.db, check=0)

    def test_truncated_data_db(self):
        for keep in (0, 100):
            with self.subTest(keep=keep):
                shutil.rmtree(self.path("copy"), ignore_errors=True)
                copy = self.damaged_copy(lambda p, size: os.truncate(p, keep))
                self.assertOneLineError(run("fsck", copy, check=2), "fsck")
                self.check_fails_cleanly(copy)

    def test_truncated_to_half(self):
        self.check_fails_cleanly(self.damaged_copy(lambda p, size: os.truncate(p, size // 2)))

    def test_garbled_header(self):
        def garble(p, size):
            with open(p, "r+b") as f:
                f.write(os.urandom(512))
        copy = self.damaged_copy(garble)
        self.assertOneLineError(run("fsck", copy, check=2), "fsck")
        self.check_fails_cleanly(copy)

    def test_run_on_a_damaged_database(self):
        """amino run refuses a database it cannot open, and reports damage met later once,
        each time naming the fsck to run; nothing of the original changes. The file bytes
        (data.db) and the names (path.db, read by every path call) alike."""
        def half(p, size):
            os.truncate(p, size // 2)

        def garble_middle(p, size):
            with open(p, "r+b") as f:
                f.seek(size // 2 // 4096 * 4096)
                f.write(os.urandom(16 * 4096))
        def garble_all_but_meta(p, size):
            # Every page but the first: met as soon as the database is read at start.
            with open(p, "r+b") as f:
                f.seek(64 * 1024)
                f.write(os.urandom(max(0, size - 64 * 1024)))
        def garble_page_two(p, size):
            # path.db of a small tree is a few 4 KiB pages: its root and leaves.
            with open(p, "r+b") as f:
                f.seek(2 * 4096)
                f.write(os.urandom(4096))
        cases = [("data.db", "truncated", half), ("data.db", "garbled", garble_middle),
                 ("data.db", "garbled from its second page", garble_all_but_meta),
                 ("path.db", "truncated", half), ("path.db", "garbled", garble_page_two)]
        for db_file, name, damage in cases:
            with self.subTest(file=db_file, damage=name):
                shutil.rmtree(self.path("copy"), ignore_errors=True)
                copy = self.damaged_copy(damage, db_file)
                mp = self.path("m")
                proc = run("run", "--mount", f"{mp}={copy}", "--", "sh", "-c",
                           f"cat {mp}/d/* > /dev/null")
                err = proc.stderr.decode(errors="replace")
                self.assertNotEqual(proc.returncode, 0, err)
                self.assertIn(f"'amino fsck {copy}'", err)
                self.assertEqual(err.count("amino fsck"), 1, err)
                self.assertEqual(digest_dir(self.db), self.original)


if __name__ == "__main__":
    unittest.main()
