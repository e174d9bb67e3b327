"""`amino run --stats` and `--trace`: the stop-kind table and per-call counts, and strace-like
lines naming each trapped call with its quoted paths and its result, on stderr or in a file."""

import os
import re

import ittest
from ittest import write


def setup(root):
    write(root, "file.txt", "some text\n")
    write(root, 'with "quote" and space', "q\n")


STOP_KINDS = ("seccomp", "syscall-entry", "syscall-exit", "signal", "event", "group-stop",
              "notification")


class DiagnosticsTest(ittest.ScenarioTest):
    def run_amino(self, mode, amino_args, argv):
        scratch = self.scratch(setup)
        proc = self.launch(mode, argv, scratch, amino_args=amino_args)
        out, err = self.finish(proc, 120, f"{mode} {amino_args} {argv}")
        return ittest.exit_status(proc.returncode), out, err.decode(errors="replace"), scratch

    def test_stats(self):
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                # Plain notify runs with --emulate=none: pure pass-through, which needs no
                # ptrace stop at all (the default mount handler stops for mmap, dup, exec).
                extra = ["--emulate=none"] if mode == "notify" else []
                status, out, err, _ = self.run_amino(mode, ["--stats", *extra],
                                                     ["cat", "file.txt", "missing"])
                self.assertEqual(status, 1)
                self.assertEqual(out, b"some text\n")
                self.assertIn("cat: missing: No such file or directory", err)
                backend = ittest.MODE_FLAGS[mode][1]
                self.assertRegex(err, rf"amino: backend {backend}( \([a-z -]+\))?, \d+ stops")
                kinds = dict(re.findall(r"^(%s) +(\d+)$" % "|".join(STOP_KINDS), err, re.M))
                self.assertEqual(sorted(kinds), sorted(STOP_KINDS), err)
                if backend == "notify":
                    # Pass-through needs no stop; the handlers that serve calls stop for dup and mmap.
                    self.assertGreater(int(kinds["notification"]), 0, err)
                    self.assertEqual(int(kinds["syscall-entry"]), 0, err)
                    if mode == "notify":
                        self.assertEqual(int(kinds["seccomp"]), 0, err)
                elif backend == "seccomp":
                    self.assertGreater(int(kinds["seccomp"]), 0, err)
                    self.assertEqual(int(kinds["syscall-entry"]), 0, err)
                    self.assertEqual(int(kinds["notification"]), 0, err)
                else:
                    self.assertEqual(int(kinds["seccomp"]), 0, err)
                    self.assertGreater(int(kinds["syscall-entry"]), 0, err)
                rows = re.findall(r"^([a-z_0-9]+) +(\d+)(?: +([\d.]+) +([\d.]+))?$", err, re.M)
                calls = {name: int(n) for name, n, _, _ in rows}
                for call in ("openat", "read", "write", "close", "execve"):
                    self.assertGreater(calls.get(call, 0), 0, f"{call} not counted:\n{err}")
                # Under notify a trapped call's notification is one stop: the monitor's time for
                # the call's notifications, in ms and per notification (a call may also have
                # ptrace stops, untimed), adding up to no more than the whole.
                timed = {name: (float(ms), float(us)) for name, n, ms, us in rows if ms}
                if backend == "notify":
                    for call in ("openat", "read", "close"):
                        self.assertIn(call, timed, err)
                        ms, us = timed[call]
                        self.assertGreater(ms, 0, err)
                        # ms is rounded to the µs: its share per stop may be off by 0.5 µs.
                        self.assertGreaterEqual(us + 0.01, (ms - 0.0005) * 1000 / calls[call], err)
                    total = float(re.search(r"stops, ([\d.]+) ms in the monitor", err).group(1))
                    self.assertLessEqual(sum(ms for ms, _ in timed.values()), total + 0.01, err)
                else:
                    self.assertEqual(timed, {}, err)
                # What the monitor holds: its own peak, and a mount's database regions.
                peak = re.search(r"^amino: monitor peak resident memory (\d+) KiB$", err, re.M)
                self.assertIsNotNone(peak, err)
                self.assertGreater(int(peak.group(1)), 1024, err)
                regions = re.findall(
                    r"^amino: (.+): database regions (\d+) KiB in (\d+) files, (\d+) KiB allocated$",
                    err, re.M)
                if mode.startswith("mount"):
                    self.assertEqual(len(regions), 1, err)
                    _, size, files, allocated = regions[0]
                    self.assertGreater(int(files), 0, err)
                    self.assertGreater(int(size), 1024, err)
                    self.assertGreater(int(allocated), 0, err)
                elif mode.startswith("host"):  # the host handler has no database
                    self.assertEqual(regions, [], err)

    def test_descriptor_flag_calls_need_no_stop(self):
        # F_GETFD and F_SETFD act on the descriptor the program holds, served or not: the filter
        # lets them through, while every other fcntl command still reaches the monitor.
        script = ("import fcntl, os\n"
                  "fd = os.open('file.txt', os.O_RDONLY)\n"
                  "seen = set()\n"
                  "for i in range(300):\n"
                  "    fcntl.fcntl(fd, fcntl.F_SETFD, i % 2)\n"
                  "    seen.add((i % 2, fcntl.fcntl(fd, fcntl.F_GETFD)))\n"
                  "flags = fcntl.fcntl(fd, fcntl.F_GETFL)\n"
                  "print(sorted(seen), flags & os.O_ACCMODE == os.O_RDONLY,\n"
                  "      os.read(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 0), 4))\n")
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                status, out, err, _ = self.run_amino(mode, ["--stats"], ["python3", "-c", script])
                self.assertEqual((status, out), (0, b"[(0, 0), (1, 1)] True b'some'\n"), err)
                if ittest.MODE_FLAGS[mode][1] == "ptrace":
                    continue  # a stop at every call: the filter is not used
                calls = dict(re.findall(r"^([a-z_0-9]+) +(\d+)", err, re.M))
                # The interpreter's own start-up makes a few fcntl calls of other commands.
                self.assertGreater(int(calls.get("fcntl", 0)), 0, err)
                self.assertLess(int(calls["fcntl"]), 300, err)

    def check_trace_lines(self, text, mode):
        self.assertRegex(text, r'\[pid \d+\] openat\(AT_FDCWD, "file\.txt", O_RDONLY[^)]*\) = \d+')
        self.assertRegex(text, r'openat\(AT_FDCWD, "missing", O_RDONLY[^)]*\) = -1 ENOENT')
        self.assertRegex(text, r'openat\(AT_FDCWD, "with \\"quote\\" and space", [^)]*\) = \d+')
        self.assertRegex(text, r"\bread\(\d+, 0x[0-9a-f]+, \d+\) = 10\b")
        self.assertRegex(text, r"\bwrite\(1, 0x[0-9a-f]+, 10\) = 10\b")
        self.assertRegex(text, r'execve\("[^"]*/cat", ')
        # The trace starts with the command: the monitor's own calls before it are not shown.
        first = text.splitlines()[0]
        self.assertRegex(first, r"^\[pid \d+\] execve\(", f"{mode}: first trace line")

    def test_trace_to_stderr(self):
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                status, out, err, _ = self.run_amino(
                    mode, ["--trace"], ["cat", "file.txt", "missing", 'with "quote" and space'])
                self.assertEqual(status, 1)
                self.assertEqual(out, b"some text\nq\n")
                # cat's own message is on stderr too, written in pieces between trace lines.
                self.check_trace_lines(err, mode)

    def test_trace_to_file(self):
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                trace = os.path.join(self.root, f"trace-{mode}.txt")
                status, out, err, _ = self.run_amino(
                    mode, [f"--trace={trace}"],
                    ["cat", "file.txt", "missing", 'with "quote" and space'])
                self.assertEqual(status, 1)
                self.assertEqual(out, b"some text\nq\n")
                self.assertEqual(err, "cat: missing: No such file or directory\n")
                with open(trace) as f:
                    self.check_trace_lines(f.read(), mode)

    def test_trace_names_each_process(self):
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                trace = os.path.join(self.root, f"trace-{mode}.txt")
                status, out, _, _ = self.run_amino(
                    mode, [f"--trace={trace}"], ["/bin/sh", "-c", "cat file.txt; cat file.txt"])
                self.assertEqual(status, 0)
                with open(trace) as f:
                    text = f.read()
                pids = set(re.findall(r'^\[pid (\d+)\] openat\(AT_FDCWD, "file\.txt"', text, re.M))
                self.assertEqual(len(pids), 2, text[-3000:])

    def test_command_words_pass_unchanged(self):
        # Words after the command, even ones that look like options of `amino run`, are the
        # command's; with or without '--' before the command.
        words = ["%s|", "", "a b", "--stats", "--trace", "--", "-x", "--backend", "ptrace"]
        for mode in self.amino_modes():
            for dashdash in (True, False):
                with self.subTest(mode=mode, dashdash=dashdash):
                    argv = [ittest.AMINO, "run", *ittest.MODE_FLAGS[mode]]
                    argv += (["--"] if dashdash else []) + ["printf", *words]
                    proc = self.launch("native", argv, self.scratch())
                    out, err = self.finish(proc, 60, str(argv))
                    self.assertEqual((proc.returncode, out, err),
                                     (0, b"|a b|--stats|--trace|--|-x|--backend|ptrace|", b""))

    def test_trace_file_cannot_be_written(self):
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                status, out, err, _ = self.run_amino(
                    mode, ["--trace=/nonexistent/dir/trace.txt"], ["true"])
                self.assertEqual(status, 2)
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertIn("/nonexistent/dir/trace.txt", err)


if __name__ == "__main__":
    ittest.main()
