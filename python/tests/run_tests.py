#!/usr/bin/env python3
"""python.package: installs the package with pip into a scratch directory, runs its tests
natively (no transactions: ENOSYS) and under `amino run` on a fresh mount.
Environment: AMINO (the amino binary), AMINO_LIBRARY (libamino.so), AMINO_PYTHON_SOURCE."""

import os
import shutil
import subprocess
import sys
import tempfile

AMINO = os.environ["AMINO"]
SOURCE = os.environ["AMINO_PYTHON_SOURCE"]


def run(argv, env, what):
    print("+ " + what, flush=True)
    proc = subprocess.run(argv, env=env, timeout=300)
    if proc.returncode != 0:
        sys.exit("%s failed (exit %d)" % (what, proc.returncode))


def main():
    scratch = tempfile.mkdtemp(prefix="amino-python-")
    try:
        site = os.path.join(scratch, "site")
        # From a copy: pip builds in the tree it is given.
        copy = os.path.join(scratch, "src")
        shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns("build", "*.egg-info"))
        run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--no-build-isolation", "--root-user-action=ignore", "--target", site, copy],
            dict(os.environ), "pip install of python/")
        env = dict(os.environ, PYTHONPATH=site, PYTHONDONTWRITEBYTECODE="1")
        tests = os.path.join(SOURCE, "tests", "test_amino.py")
        run([sys.executable, tests, "-v"], dict(env, AMINO_TEST_MODE="native"), "native tests")
        db, mp = os.path.join(scratch, "db"), os.path.join(scratch, "m")
        run([AMINO, "mkfs", db], env, "amino mkfs")
        run([AMINO, "run", "--lock-timeout", "1", "--mount", "%s=%s" % (mp, db), "--",
             sys.executable, tests, "-v"],
            dict(env, AMINO_TEST_MODE="mount", AMINO_TEST_DIR=mp), "tests under amino run")
        run([AMINO, "fsck", db], env, "amino fsck")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
