"""Exit statuses through `amino run`: the command's exit code, 128+N when signal N killed it, 127
for a command that does not exist and 126 for one that cannot be executed, as a shell reports
them."""

import os

import ittest
from ittest import program, write


class ExitStatusTest(ittest.ScenarioTest):
    def test_exit_codes(self):
        for code in (0, 1, 3, 255):
            with self.subTest(code=code):
                self.check([program("die"), "exit", str(code)], expect_status=code)
                self.check(["/bin/sh", "-c", f"echo out; echo err >&2; exit {code}"],
                           expect_status=code)

    def test_killed_by_signal(self):
        for name, number in (("TERM", 15), ("KILL", 9), ("SEGV", 11), ("ABRT", 6)):
            with self.subTest(signal=name):
                self.check([program("die"), "signal", name], expect_status=128 + number)

    def test_shell_killed_by_signal(self):
        self.check(["/bin/sh", "-c", "kill -TERM $$"], expect_status=143)

    def test_exit_status_of_a_grandchild_does_not_leak(self):
        # The command's own status counts, not that of the last process to exit.
        self.check(["/bin/sh", "-c", "(sleep 0.3; exit 9) & exit 4"], expect_status=4)

    def test_cannot_run(self):
        # `env` executes its command the way `amino run` must: 127 when it does not exist, 126
        # when it is not executable (no x bit, or a directory). Its message names the command.
        def setup(root):
            write(root, "not-executable", "#!/bin/sh\necho no\n", 0o644)
            os.mkdir(os.path.join(root, "a-directory"))

        for command, status in (("./does-not-exist", 127), ("no-such-command-anywhere", 127),
                                ("./not-executable", 126), ("./a-directory", 126)):
            with self.subTest(command=command):
                native = self.execute("native", ["env", "--", command, "arg"], setup=setup)
                self.assertEqual(native.status, status, native.stderr)
                for mode in self.amino_modes():
                    with self.subTest(mode=mode):
                        got = self.execute(mode, [command, "arg"], setup=setup)
                        self.assertEqual(got.status, native.status, got.stderr)
                        self.assertEqual(got.stdout, b"")
                        lines = got.stderr.decode().splitlines()
                        self.assertEqual(len(lines), 1, f"stderr: {lines}")
                        self.assertIn(command, lines[0])
                        self.assertIn(os.strerror(2 if native.status == 127 else 13), lines[0])
                        self.assertEqual(got.tree, native.tree)


if __name__ == "__main__":
    ittest.main()
