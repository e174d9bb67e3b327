"""Job control through `amino run` in a terminal (tmux drives an interactive bash): Ctrl-Z stops
the job and the shell reports it stopped, `fg` resumes it, Ctrl-C ends it; the terminal shows
the same as when the program runs directly."""

import os
import re
import shlex
import shutil
import subprocess
import time

import ittest
from ittest import program, wait_for

PROMPT = "$ "
# A line that starts with the prompt; after Ctrl-C the prompt may follow the echoed ^C.
PROMPT_LINE = re.compile(r"^(\^C)?\$( |$)")


class Terminal:
    """A tmux server of its own, running one interactive bash in a 100x30 window."""

    def __init__(self, test, cwd, env, bindir):
        self.socket = f"amino-it-{os.getpid()}-{time.monotonic_ns()}"
        self.test = test
        # The test's own HOME: `amino run` makes its default mount there. `bindir` holds the
        # job, outside the directory a mount mode mounts (where it would be a host file the
        # mount hides, which amino run points out).
        shell = (f"env -i PATH={shlex.quote(bindir)}:/usr/bin:/bin TERM=screen "
                 f"HOME={shlex.quote(env['HOME'])} "
                 "PS1='$ ' bash --norc --noprofile -i")
        self.tmux("new-session", "-d", "-x", "100", "-y", "30", "-c", cwd, shell)
        test.addCleanup(self.tmux, "kill-server", check=False)
        self.wait_for_prompt(1)

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout

    def screen(self):
        lines = self.tmux("capture-pane", "-p", "-J").rstrip("\n").splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(line.rstrip() for line in lines)

    def keys(self, *keys):
        self.tmux("send-keys", *keys)

    def type(self, text):
        self.tmux("send-keys", "-l", text)
        self.tmux("send-keys", "Enter")

    def wait_for_text(self, text, count=1, timeout=10):
        if not wait_for(lambda: self.screen().count(text) >= count, timeout):
            self.test.fail(f"terminal never showed {text!r} ({count}x); screen:\n{self.screen()}")

    def prompts(self):
        return sum(1 for line in self.screen().splitlines() if PROMPT_LINE.match(line))

    def at_prompt(self, count):
        lines = self.screen().splitlines()
        return bool(lines) and re.match(r"^(\^C)?\$$", lines[-1]) and self.prompts() >= count

    def wait_for_prompt(self, count, timeout=10):
        """Waits until the screen ends with the count-th prompt."""
        if not wait_for(lambda: self.at_prompt(count), timeout):
            self.test.fail(f"no prompt #{count}; screen:\n{self.screen()}")


class JobControlTest(ittest.ScenarioTest):
    def setUp(self):
        super().setUp()
        if not shutil.which("tmux"):
            self.fail("tmux is missing: run scripts/install-deps")

    def session(self, mode):
        """Runs the interactive program as job prog in a terminal: stop, resume, interrupt.
        Returns what the terminal showed."""
        bindir = self.scratch()
        scratch = self.scratch()
        command = ittest.amino_prefix(mode, scratch=scratch) + [program("interactive")]
        with open(os.path.join(bindir, "prog"), "w") as f:
            f.write("#!/bin/sh\nexec " + " ".join(f"'{c}'" for c in command) + "\n")
        os.chmod(os.path.join(bindir, "prog"), 0o755)
        term = Terminal(self, scratch, self.env(), bindir)
        term.type("prog")
        term.wait_for_text("ready")
        term.keys("C-z")
        term.wait_for_text("Stopped")
        term.wait_for_prompt(2)
        term.type("jobs")
        term.wait_for_prompt(3)
        term.type("fg")
        term.wait_for_text("prog", count=4)
        term.type("hello")
        term.wait_for_text("got: hello")
        term.keys("C-c")
        term.wait_for_prompt(4)
        term.type("echo status=$?")
        term.wait_for_text("status=")
        term.wait_for_prompt(5)
        term.type("prog")
        term.wait_for_text("ready", count=2)
        term.type("bye")
        term.wait_for_text("got: bye")
        term.keys("C-d")
        term.wait_for_text("eof")
        term.wait_for_prompt(6)
        term.type("echo status=$?")
        term.wait_for_prompt(7)
        # Ctrl-C ends a shell loop too: the shell sees its job killed by SIGINT and stops.
        term.type("for i in 1 2 3; do prog; echo after $i; done")
        term.wait_for_text("ready", count=3)
        for _ in range(3):
            term.keys("C-c")
            if wait_for(lambda: term.at_prompt(8), 2):
                break
        term.type("echo status=$?")
        term.wait_for_prompt(9)
        return term.screen()

    def test_stop_resume_interrupt(self):
        native = self.session("native")
        self.assertIn("status=130", native)
        for mode in ittest.MODES:
            with self.subTest(mode=mode):
                got = self.session(mode)
                self.assertEqual(native, got, f"terminal natively (-) and in {mode} (+)")


if __name__ == "__main__":
    ittest.main()
