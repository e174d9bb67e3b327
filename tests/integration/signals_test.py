"""Signals and `amino run`: signals sent to the command, stop and continue, handlers interrupting
blocking calls, and signals sent to `amino run` itself."""

import os
import signal
import time

import ittest
from ittest import alive, exists, process_state, program, read_pidfile, touch, wait_for

# Writes its pid, then becomes `sleep 30` (same pid).
# Pid files hold numbers that differ from run to run.
PIDFILES = ("pid",)

SLEEPER = ["/bin/sh", "-c", "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 30"]


class SignalsTest(ittest.ScenarioTest):
    def signal_command(self, sig):
        def during(mode, scratch, proc):
            os.kill(read_pidfile(os.path.join(scratch, "pid"), proc), sig)
        return during

    def test_sigterm_to_command(self):
        self.check(SLEEPER, during=self.signal_command(signal.SIGTERM), volatile=PIDFILES,
                   expect_status=143)

    def test_sigint_to_command(self):
        self.check(SLEEPER, during=self.signal_command(signal.SIGINT), volatile=PIDFILES,
                   expect_status=130)

    def test_sighup_to_command(self):
        self.check(SLEEPER, during=self.signal_command(signal.SIGHUP), volatile=PIDFILES,
                   expect_status=129)

    def test_handled_sigterm_to_command(self):
        self.check([program("sigterm_handler"), "pid"], during=self.signal_command(signal.SIGTERM),
                   volatile=PIDFILES, expect_status=7)

    def test_stop_and_continue(self):
        # The stopped command makes no progress until SIGCONT, then finishes normally.
        script = ("echo $$ > pid.tmp && mv pid.tmp pid; while [ ! -e go ]; do sleep 0.05; done; "
                  "echo finished > out; echo done")

        def during(mode, scratch, proc):
            pid = read_pidfile(os.path.join(scratch, "pid"), proc)
            os.kill(pid, signal.SIGSTOP)
            state = wait_for(lambda: process_state(pid) in ("T", "t"), 5)
            self.assertTrue(state, f"{mode}: pid {pid} not stopped: {process_state(pid)}")
            touch(os.path.join(scratch, "go"))
            time.sleep(0.5)
            self.assertFalse(exists(os.path.join(scratch, "out")),
                             f"{mode}: the stopped command ran on")
            self.assertIn(process_state(pid), ("T", "t"), f"{mode}: no longer stopped")
            self.assertIsNone(proc.poll(), f"{mode}: returned while the command was stopped")
            os.kill(pid, signal.SIGCONT)

        self.check(["/bin/sh", "-c", script], during=during, volatile=PIDFILES, expect_status=0)

    def test_handlers_interrupt_read_and_nanosleep(self):
        self.check([program("interrupt")], volatile=PIDFILES, expect_status=0)

    def test_queued_signals_during_mappings_keep_order_and_origin(self):
        # Signals that arrive while the monitor runs calls of its own in the tracee (mmap of a
        # file it serves) are held, then delivered in order with their sender's siginfo.
        self.check([program("queued_signals")], expect_status=0)

    def test_no_eintr_from_calls_that_never_wait(self):
        # A handler without SA_RESTART (a shell's SIGCHLD) must not make close, stat, open or
        # dup fail with EINTR when its signal comes while the monitor holds the call.
        self.check([program("no_spurious_eintr")], expect_status=0)

    def test_sigterm_to_amino_reaches_command(self):
        # Natively the signal goes to the command itself; under amino to `amino run`.
        def during(mode, scratch, proc):
            read_pidfile(os.path.join(scratch, "pid"), proc)
            os.kill(proc.pid, signal.SIGTERM)

        self.check([program("sigterm_handler"), "pid"], during=during, volatile=PIDFILES,
                   expect_status=7)
        self.check(SLEEPER, during=during, volatile=PIDFILES, expect_status=143)

    def test_sighup_to_amino_reaches_command(self):
        def during(mode, scratch, proc):
            read_pidfile(os.path.join(scratch, "pid"), proc)
            os.kill(proc.pid, signal.SIGHUP)

        self.check(SLEEPER, during=during, volatile=PIDFILES, expect_status=129)

    def test_sigint_to_process_group_ends_shell_loop(self):
        # A terminal's Ctrl-C reaches the whole foreground process group. A shell waiting for
        # `amino run` decides whether to go on with its script by how the job ended: killed by
        # SIGINT, the script stops, as when the command runs directly.
        def run(mode):
            scratch = self.scratch()
            inner = " ".join(f"'{w}'" for w in ittest.amino_prefix(mode) + SLEEPER[:2]) + \
                " 'echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 3'"
            proc = self.launch("native", ["/bin/bash", "-c", f"for i in 1 2; do {inner}; "
                                          "echo \"after $i: status $?\"; rm -f pid; done"], scratch)
            read_pidfile(os.path.join(scratch, "pid"), proc)
            os.killpg(proc.pid, signal.SIGINT)
            out, err = self.finish(proc, 60, mode)
            return ittest.exit_status(proc.returncode), out, err

        native = run("native")
        self.assertEqual(native, (130, b"", b""))
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                self.assertEqual(run(mode), native)

    def test_sigkill_to_amino_leaves_no_tracee(self):
        script = ("sleep 60 & echo $! > bg.tmp; mv bg.tmp bg; (sleep 60; echo survived > out) & "
                  "echo $! > sub.tmp; mv sub.tmp sub; echo $$ > pid.tmp; mv pid.tmp pid; wait")
        for mode in self.amino_modes():
            with self.subTest(mode=mode):
                scratch = self.scratch()
                proc = self.launch(mode, ["/bin/sh", "-c", script], scratch)
                pids = [read_pidfile(os.path.join(scratch, name), proc)
                        for name in ("pid", "bg", "sub")]
                # One of them is stopped: it must not survive either.
                os.kill(pids[1], signal.SIGSTOP)
                wait_for(lambda: process_state(pids[1]) in ("T", "t"), 5)
                os.kill(proc.pid, signal.SIGKILL)
                proc.communicate()
                wait_for(lambda: not any(alive(p) for p in pids), 2)
                survivors = [p for p in pids if alive(p)]
                for p in survivors:
                    os.kill(p, signal.SIGKILL)
                self.assertEqual(survivors, [],
                                 f"{mode}: processes {survivors} of {pids} outlived amino run")


if __name__ == "__main__":
    ittest.main()
