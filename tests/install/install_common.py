"""What the install tests share: commands that must succeed, checks, timestamped progress, and
a scratch directory kept when the test fails."""

import shutil
import subprocess
import sys
import tempfile
import time

_t0 = time.monotonic()


class Failure(Exception):
    """A check failed; the message says what ran and what came back."""


def say(msg):
    print("[%6.1f s] %s" % (time.monotonic() - _t0, msg), flush=True)


def run(argv, what, env=None, cwd=None, timeout=300):
    """Runs argv, which must succeed; returns its standard output."""
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                          timeout=timeout)
    if proc.returncode != 0:
        raise Failure("%s exited %d\n%s%s" % (what, proc.returncode, proc.stdout.decode(),
                                              proc.stderr.decode()))
    return proc.stdout.decode()


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def main(body, prefix):
    """Runs body(scratch) in a fresh scratch directory; exit status 0 when it passes."""
    scratch = tempfile.mkdtemp(prefix=prefix)
    ok = False
    try:
        body(scratch)
        ok = True
    except Failure as e:
        say("FAIL: %s" % e)
    finally:
        if ok:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            say("scratch directory kept: %s" % scratch)
    say("PASS" if ok else "FAILED")
    return 0 if ok else 1
