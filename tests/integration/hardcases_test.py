"""Cases a system-call monitor gets wrong most often: lock waits interrupted by signals,
exit_group and SIGKILL while threads sit in trapped calls, CLONE_UNTRACED, system calls of
other ABIs (int $0x80, the x32 bit) from 64-bit code, a program with a seccomp filter of its own,
and a program that is itself a tracer (strace)."""

import os
import shutil

import ittest
from ittest import program, write



def refused_on_mount(native_lines):
    """foreign_abi's output when its cwd is on a mount: each call that names a file there (or a
    descriptor a refused open did not make) fails; getpid and /dev/null are the native ones."""
    refused = {
        'int 0x80 open("in.txt", O_RDONLY)': "-ENOSYS",
        "int 0x80 read": "-EBADF: int 0x80 close = -EBADF",
        'int 0x80 open("missing.txt")': "-ENOSYS",
        'int 0x80 mkdir("dir32", 0750)': "-ENOSYS",
        'int 0x80 open("out32.txt", O_WRONLY|O_CREAT|O_TRUNC, 0640)': "-ENOSYS",
        "int 0x80 write": "-EBADF",
        'x32 openat("in.txt")': "-ENOSYS",
        'x32 mkdir("dirx32")': "-ENOSYS",
        'x32 openat("outx32.txt", O_CREAT)': "-ENOSYS",
    }
    out = []
    previous = None
    for line in native_lines:
        call, sep, _ = line.partition(" = ")
        if call == "int 0x80 close" and previous == "int 0x80 read":
            continue  # on the read's line: the refused read printed no newline
        if call == "int 0x80 close" and previous == "int 0x80 write":
            line = call + " = -EBADF"
        elif sep and call in refused:
            line = call + sep + refused[call]
        out.append(line)
        previous = call
    return out

class HardCasesTest(ittest.ScenarioTest):
    def test_lock_waits_interrupted_by_signals(self):
        # fcntl(F_SETLKW) and flock(LOCK_EX) waiting for a lock another process holds, while a
        # signal arrives: handled without SA_RESTART (EINTR), with it (the wait goes on),
        # ignored, and a SIGCHLD with its default action (neither disturbs the wait).
        self.check([program("lockwait")], expect_status=0, timeout=60)

    # 20 processes in turn whose 8 threads loop on file calls when the process ends: about 1 s
    # natively, and as long under strace -f; a run still going after EXIT_TIMEOUT is stuck.
    EXIT_TIMEOUT = 30

    def test_exit_from_leader_while_threads_in_file_calls(self):
        self.check([program("exitgroup"), "leader"], expect_status=0, timeout=self.EXIT_TIMEOUT)

    def test_exit_group_from_non_leader_thread(self):
        self.check([program("exitgroup"), "thread"], expect_status=0, timeout=self.EXIT_TIMEOUT)

    def test_sigkill_while_threads_in_file_calls(self):
        self.check([program("exitgroup"), "kill"], expect_status=0, timeout=self.EXIT_TIMEOUT)

    def test_walk_up_by_dotdot_descriptors(self):
        # openat(fd, "..") from the cwd to "/", as glibc's getcwd walks past PATH_MAX: on a
        # mount the walk leaves through the mount point, and each level must be the host
        # directory itself (not a placeholder) to /proc, fchdir and getcwd.
        self.check([program("updir")], expect_status=0, timeout=30)

    def test_clone_untraced_child_stays_traced(self):
        native = self.check([program("untraced")], expect_status=0, timeout=30)
        # The child's own open must be seen by the monitor: a child that escaped tracing makes
        # its calls unseen (and, under the filter, unserviceable).
        for mode in self.amino_modes():
            with self.subTest(mode=mode, trace=True):
                trace = os.path.join(self.root, f"trace-{mode}.txt")
                scratch = self.scratch()
                proc = self.launch(mode, [program("untraced")], scratch,
                                   amino_args=[f"--trace={trace}"])
                out, err = self.finish(proc, 30, f"{mode}: untraced with --trace")
                self.assertEqual((ittest.exit_status(proc.returncode), out),
                                 (native.status, native.stdout), err.decode(errors="replace"))
                with open(trace, errors="replace") as f:
                    text = f.read()
                self.assertRegex(
                    text, r'\[pid \d+\] openat\(AT_FDCWD, "untraced\.txt", '
                    r'O_WRONLY\|O_CREAT\|O_TRUNC[^)]*\) = \d+',
                    f"{mode}: the CLONE_UNTRACED child's openat is not in the trace:\n{text}")

    def test_foreign_system_call_abis(self):
        # int $0x80 (i386 numbers, 32-bit pointers) and the x32 bit from 64-bit code reach the
        # kernel as natively: same results, same files made. On a mount they are not served:
        # those that name a file there fail with ENOSYS, said once on stderr, and reach nothing
        # on the host under the mount point; the others (getpid, /dev/null) run as natively.
        argv = [program("foreign_abi")]
        setup = lambda root: write(root, "in.txt", "read through int 0x80\n")
        native = self.execute("native", argv, setup=setup, timeout=30)
        self.assertEqual(native.status, 0, native.stderr)
        for mode in ittest.MODES:
            with self.subTest(mode=mode):
                got = self.execute(mode, argv, setup=setup, timeout=30)
                if mode not in ittest.MOUNT_MODES:
                    self.assertSameOutcome(native, got, mode, argv)
                    continue
                err = got.stderr.decode(errors="replace")
                self.assertEqual(got.status, 0, err)
                self.assertEqual(got.stdout.decode().splitlines(),
                                 refused_on_mount(native.stdout.decode().splitlines()), err)
                self.assertRegex(err, r"^amino run: process \d+ made a 32-bit \(int 0x80\) "
                                 r"system call, open, on a file Amino serves; only x86-64 calls "
                                 r"are served: it fails with ENOSYS\n\Z")
                self.assertEqual(sorted(got.tree), [".", "in.txt"])
                self.assertEqual(got.tree["in.txt"], native.tree["in.txt"])
                self.assertEqual(got.mount_problems, ())

    def check_own_filter(self, argv):
        # Under --backend ptrace (and kernel) the monitor emulates calls at their entry stop,
        # before the program's own filter could run, so a handler that serves calls (the mount
        # handler, the default, and --emulate=host) refuses the filter with a message instead of
        # letting served calls bypass it.
        native = self.execute("native", argv, timeout=30)
        self.assertEqual(native.status, 0, native.stderr)
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                got = self.execute(mode, argv, timeout=30)
                if mode.endswith(("ptrace", "kernel")):
                    err = got.stderr.decode(errors="replace")
                    self.assertEqual(got.status, 100, err)
                    self.assertIn("installs its own seccomp filter", err)
                    self.assertIn("seccomp(SECCOMP_SET_MODE_FILTER): Operation not permitted", err)
                else:
                    self.assertSameOutcome(native, got, mode, argv)

    def test_own_seccomp_filter_errno(self):
        # The program's SECCOMP_RET_ERRNO rules take effect whatever the monitor would do with
        # the call, and the rest of its file I/O is unaffected.
        self.check_own_filter([program("own_filter"), "errno"])

    def test_own_seccomp_filter_trace(self):
        # SECCOMP_RET_TRACE of the program's own filter: with no tracer of its own the call
        # fails with ENOSYS, as natively, and the monitor does not take it for one of its stops.
        self.check_own_filter([program("own_filter"), "trace"])

    def test_strace_under_amino(self):
        # A tracer under amino: its tracees are amino's already, and a process has one tracer,
        # so strace's child cannot ask to be traced (PTRACE_TRACEME fails with EPERM). strace
        # must say so and exit 1, not hang, not run its command untraced, not report success.
        strace = shutil.which("strace", path=self.env()["PATH"])
        self.assertIsNotNone(strace, "strace is not installed (scripts/install-deps)")
        argv = [strace, "-f", "true"]
        native = self.execute("native", argv, timeout=30)
        err = native.stderr.decode(errors="replace")
        # Natively strace works: the trace shows true executed and run to its end.
        self.assertEqual(native.status, 0, err)
        self.assertRegex(err, r'(?m)^execve\("/usr/bin/true", \["true"\], .*\) = 0$', err)
        self.assertRegex(err, r"(?m)^\+\+\+ exited with 0 \+\+\+$", err)
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                got = self.execute(mode, argv, timeout=30)
                err = got.stderr.decode(errors="replace")
                self.assertEqual(got.status, 1, f"{mode}: {err}")
                self.assertIn("ptrace(PTRACE_TRACEME, ...): Operation not permitted", err,
                              f"{mode}: {err}")
                self.assertNotIn("execve(", err, f"{mode}: traced nonetheless? {err}")
                self.assertEqual(got.stdout, b"")
                self.assertEqual(got.tree, native.tree)


if __name__ == "__main__":
    ittest.main()
