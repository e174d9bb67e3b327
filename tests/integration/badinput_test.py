"""Bad arguments from a traced program: invalid pointers, over-long and unterminated paths, bad
descriptors. The program sees the same errors as natively, and `amino run` survives."""

import os

import ittest
from ittest import program, write


def setup(root):
    write(root, "file.txt", "hello world\n")
    os.symlink("file.txt", os.path.join(root, "link"))


class BadInputTest(ittest.ScenarioTest):
    def test_bad_arguments(self):
        native = self.check([program("badinput")], setup=setup, expect_status=0)
        self.assertIn(b"still alive", native.stdout)

    def test_bad_arguments_with_trace(self):
        # Formatting the calls for --trace reads the same bad pointers.
        native = self.execute("native", [program("badinput")], setup=setup)
        self.assertEqual(native.status, 0, native.stderr.decode(errors="replace")[-2000:])
        self.assertIn(b"still alive", native.stdout)
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                scratch = self.scratch(setup)
                trace = os.path.join(self.root, f"trace-{mode}")
                proc = self.launch(mode, [program("badinput")], scratch,
                                   amino_args=[f"--trace={trace}"])
                out, err = self.finish(proc, 120, mode)
                self.assertEqual(proc.returncode, 0, err.decode(errors="replace")[-2000:])
                self.assertEqual(out, native.stdout, ittest.first_difference(native.stdout, out))
                self.assertEqual(err, native.stderr)
                with open(trace) as f:
                    lines = f.read().splitlines()
                self.assertTrue(any("ENAMETOOLONG" in line for line in lines), lines[-20:])
                self.assertTrue(any(line.endswith("-1 EFAULT (Bad address)") for line in lines),
                                lines[-20:])


if __name__ == "__main__":
    ittest.main()
