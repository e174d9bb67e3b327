"""The amino package's behaviour (python/amino): run natively with AMINO_TEST_MODE=native, and
under `amino run --lock-timeout 1` with AMINO_TEST_MODE=mount and AMINO_TEST_DIR set to a
directory of an Amino mount. tests/CMakeLists.txt's python.package does both, after installing
the package with pip."""

import errno
import os
import subprocess
import sys
import unittest

import amino

MODE = os.environ.get("AMINO_TEST_MODE", "")
DIR = os.environ.get("AMINO_TEST_DIR", "")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


class NativeTest(unittest.TestCase):
    """Outside `amino run`: no transactions, and each call says so."""

    def test_not_available(self):
        self.assertFalse(amino.available())

    def test_calls_fail_with_enosys(self):
        for call in (amino.begin, amino.commit, amino.abort, amino.current, amino.depth):
            with self.assertRaises(amino.AminoError) as cm:
                call()
            self.assertEqual(cm.exception.errno, errno.ENOSYS, call.__name__)
        with self.assertRaises(amino.AminoError):
            with amino.transaction():
                self.fail("the block ran without a transaction")


class MountTest(unittest.TestCase):
    """Under `amino run`, on files of a mount."""

    def setUp(self):
        self.dir = os.path.join(DIR, self.id().rsplit(".", 1)[-1])
        os.mkdir(self.dir)

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_available(self):
        self.assertTrue(amino.available())
        self.assertEqual((amino.current(), amino.depth()), (0, 0))

    def test_block_commits(self):
        with amino.transaction() as txn:
            self.assertEqual(amino.current(), txn)
            self.assertEqual(amino.depth(), 1)
            write(self.path("a"), "one")
            write(self.path("b"), "two")
        self.assertEqual((read(self.path("a")), read(self.path("b"))), ("one", "two"))
        self.assertEqual(amino.depth(), 0)

    def test_exception_aborts_and_goes_on(self):
        write(self.path("kept"), "before")
        with self.assertRaises(KeyError):
            with amino.transaction():
                write(self.path("new"), "lost")
                write(self.path("kept"), "changed")
                raise KeyError("stop")
        self.assertFalse(os.path.exists(self.path("new")))
        self.assertEqual(read(self.path("kept")), "before")
        self.assertEqual(amino.depth(), 0)

    def test_nested_abort_undoes_only_the_child(self):
        with amino.transaction():
            write(self.path("outer"), "o")
            with self.assertRaises(RuntimeError):
                with amino.transaction():
                    self.assertEqual(amino.depth(), 2)
                    write(self.path("inner"), "i")
                    raise RuntimeError
            self.assertEqual(amino.depth(), 1)
        self.assertTrue(os.path.exists(self.path("outer")))
        self.assertFalse(os.path.exists(self.path("inner")))

    def test_suspend_and_attach(self):
        # A suspended transaction keeps its locks: this thread works outside it meanwhile only
        # on what it does not hold, so here it only looks.
        for end, kept in ((amino.commit, True), (amino.abort, False)):
            name = self.path("kept" if kept else "dropped")
            txn = amino.begin()
            write(name, "x")
            self.assertEqual(amino.suspend(), txn)
            self.assertEqual((amino.current(), amino.depth()), (0, 0))
            amino.attach(txn)
            self.assertEqual(amino.current(), txn)
            end()
            self.assertEqual(os.path.exists(name), kept, end.__name__)

    def tearDown(self):
        while amino.depth() > 0:  # what a failed test left open
            amino.abort()

    def test_attach_unknown_fails_with_errno(self):
        with self.assertRaises(amino.AminoError) as cm:
            amino.attach(0xfffffffffff)
        self.assertNotEqual(cm.exception.errno, 0)
        self.assertNotIsInstance(cm.exception, amino.AminoAborted)

    def test_system_abort_raises_amino_aborted(self):
        # Another process's transaction holds the file; this one's write waits past
        # --lock-timeout and the system aborts this transaction.
        target = self.path("contended")
        write(target, "0")
        holder = subprocess.Popen([sys.executable, "-c", (
            "import sys, time, amino\n"
            "with amino.transaction():\n"
            "    open(sys.argv[1], 'w').write('holder')\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.read()\n"), target], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "held")
            with self.assertRaises(amino.AminoAborted) as cm:
                with amino.transaction():
                    write(target, "waiter")
            self.assertEqual(cm.exception.errno, errno.EDEADLK)
            self.assertEqual(amino.depth(), 0)
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)
        self.assertEqual(read(target), "holder")


def load_tests(loader, tests, pattern):
    suites = {"native": NativeTest, "mount": MountTest}
    if MODE not in suites or (MODE == "mount" and not DIR):
        raise SystemExit("set AMINO_TEST_MODE to native or mount (with AMINO_TEST_DIR); "
                         "python.package in ctest does")
    return loader.loadTestsFromTestCase(suites[MODE])


if __name__ == "__main__":
    unittest.main()
