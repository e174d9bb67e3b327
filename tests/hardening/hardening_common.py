"""Shared machinery of the hardening tests (tests/hardening): scratch directories every user can
traverse, commands with a deadline, commands as the unprivileged user 65534, and checks.

Environment: AMINO (the amino binary), AMINO_HARDENING_PROGRAMS (the directory of the probes),
AMINO_HARDENING_BACKENDS (default "notify seccomp ptrace").
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

AMINO = os.environ.get("AMINO", "")
PROGRAMS = os.environ.get("AMINO_HARDENING_PROGRAMS", "")
BACKENDS = os.environ.get("AMINO_HARDENING_BACKENDS", "notify seccomp ptrace").split()
NOBODY = 65534
HOME = [None]  # a home directory of 65534's in the scratch directory (main() makes it)
_t0 = time.monotonic()


class Failure(Exception):
    """A check failed; the message says what ran and what came back."""


def say(msg):
    sys.stdout.write("[%6.1f s] %s\n" % (time.monotonic() - _t0, msg))
    sys.stdout.flush()


def prog(name):
    return os.path.join(PROGRAMS, name)


def as_nobody(argv, home=None):
    """argv run as uid and gid 65534 with no supplementary groups (HOME set when given)."""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise Failure("setpriv (util-linux) is not installed")
    env = ["env", "-u", "XDG_CONFIG_HOME", "-u", "XDG_DATA_HOME", "-u", "AMINO_CONFIG"]
    env.append("HOME=" + (home or HOME[0]))
    return [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"] + env + \
        list(argv)


def run(argv, what=None, timeout=30, check=True, env=None):
    """Runs argv; returns (status, stdout, stderr). `check`: status must be 0."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        raise Failure("hang: %s\n%s%s" % (what or " ".join(argv), out.decode(), err.decode()))
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    if check and proc.returncode != 0:
        raise Failure("%s exited %d\n--- stdout\n%s--- stderr\n%s" % (
            what or " ".join(argv), proc.returncode, out, err))
    return proc.returncode, out, err


def amino_run(backend, argv, mounts=(), extra=()):
    cmd = [AMINO, "run", "--backend", backend]
    for mp, db in mounts:
        cmd += ["--mount", "%s=%s" % (mp, db)]
    return cmd + list(extra) + ["--"] + list(argv)


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def main(body):
    """Runs body(scratch_dir) in a scratch directory every user can traverse."""
    for name, value in (("AMINO", AMINO), ("AMINO_HARDENING_PROGRAMS", PROGRAMS)):
        if not value:
            sys.exit("%s is not set (ctest sets it; see tests/hardening/CMakeLists.txt)" % name)
    scratch = tempfile.mkdtemp(prefix="amino-hardening-")
    os.chmod(scratch, 0o755)
    HOME[0] = os.path.join(scratch, "nobody")
    os.mkdir(HOME[0])
    os.chown(HOME[0], NOBODY, NOBODY)
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
