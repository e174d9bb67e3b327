#!/usr/bin/env python3
"""A machine crash, simulated: the Amino database lives on an ext3 file system on a loop
device; a traced program commits transactions and reports each commit on a pipe to this
driver, outside the traced tree. At a random report the whole `amino run` is stopped and the
loop device's backing file is copied: that copy is exactly what the disk held at that instant
(what the file system inside had not written out is not in it), as after a power failure. The
copy is then mounted (ext3 replays its journal), the database recovered, and every commit
reported before the instant must be there.

Under --durability sync and commit every application commit is flushed before amino_commit()
returns; under external the report itself (output leaving the tree) waits for the flush. Run
with --modes async to see the check fail: async commits reach only the operating system.

Needs root (loop devices, mounts). Environment: AMINO, COMMIT_LOOP (set by ctest);
AMINO_DURABILITY_ROUNDS (crashes per mode, default 2).
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

AMINO = os.environ.get("AMINO", "")
COMMIT_LOOP = os.environ.get("COMMIT_LOOP", "")
ROUNDS = int(os.environ.get("AMINO_DURABILITY_ROUNDS", "2"))
COMMITS = 400
FILES = 50  # commit_loop rewrites f<i % 50>


class Failure(Exception):
    pass


def sh(*argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise Failure("%s exited %d: %s%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
    return r.stdout


class LoopFs:
    """An ext3 file system in `image`, mounted at `mountpoint` through a loop device."""

    def __init__(self, image, mountpoint, make):
        self.mountpoint = mountpoint
        if make:
            with open(image, "wb") as f:
                f.truncate(96 << 20)
            sh("mkfs.ext3", "-q", "-F", image)
        os.makedirs(mountpoint, exist_ok=True)
        self.device = sh("losetup", "--find", "--show", image).strip()
        try:
            sh("mount", "-t", "ext3", self.device, mountpoint)
        except Failure:
            sh("losetup", "-d", self.device)
            raise

    def close(self):
        subprocess.run(["umount", self.mountpoint], stderr=subprocess.DEVNULL)
        subprocess.run(["losetup", "-d", self.device], stderr=subprocess.DEVNULL)


def crash_once(scratch, mode, rng):
    """Runs commit_loop until a random report, copies the disk, and checks the copy."""
    image, snapshot = os.path.join(scratch, "disk.img"), os.path.join(scratch, "crash.img")
    disk = LoopFs(image, os.path.join(scratch, "disk"), make=True)
    try:
        db = os.path.join(disk.mountpoint, "db")
        sh(AMINO, "mkfs", db)
        mp = os.path.join(scratch, "mnt")
        os.makedirs(mp, exist_ok=True)
        stop_at = rng.randint(40, 300)
        proc = subprocess.Popen(
            [AMINO, "run", "--durability", mode, "--mount", "%s=%s" % (mp, db), "--",
             "/bin/sh", "-c", 'cd "$1" && exec "$2" %d' % COMMITS, "sh", mp, COMMIT_LOOP],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, text=True)
        reported = 0
        deadline = time.monotonic() + 60
        try:
            for line in proc.stdout:
                if line.startswith("committed "):
                    reported = int(line.split()[1])
                if reported >= stop_at or time.monotonic() > deadline:
                    break
            # The instant of the crash: nothing runs while the disk is copied.
            os.killpg(proc.pid, signal.SIGSTOP)
            shutil.copyfile(image, snapshot)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        if reported < stop_at:
            raise Failure("%s: commit_loop reported only %d commits" % (mode, reported))
    finally:
        disk.close()

    crashed = LoopFs(snapshot, os.path.join(scratch, "crashed"), make=False)
    try:
        db = os.path.join(crashed.mountpoint, "db")
        out = os.path.join(scratch, "export")
        shutil.rmtree(out, ignore_errors=True)
        # Opening the database after its user died runs recovery; fsck then checks it.
        r = subprocess.run([AMINO, "fsck", db], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if r.returncode != 0:
            raise Failure("%s: amino fsck after the crash exited %d:\n%s" % (
                mode, r.returncode, r.stdout))
        sh(AMINO, "export", db, out)
        lost = []
        for i in range(max(1, reported - FILES + 1), reported + 1):
            path = os.path.join(out, "f%d" % (i % FILES))
            try:
                with open(path) as f:
                    have = int(f.read().strip() or 0)
            except FileNotFoundError:
                have = 0
            if have < i:
                lost.append((i, have))
        return reported, lost
    finally:
        crashed.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", default="sync,commit,external")
    p.add_argument("--seed", type=int, default=None)
    a = p.parse_args()
    if not AMINO or not COMMIT_LOOP:
        sys.exit("AMINO and COMMIT_LOOP must be set (ctest sets them)")
    if os.geteuid() != 0:
        sys.exit("this test needs root (loop devices and mounts)")
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print("seed %d" % seed)
    failures = 0
    scratch = tempfile.mkdtemp(prefix="amino-crash-image-", dir="/var/tmp")
    try:
        for mode in a.modes.split(","):
            for n in range(ROUNDS):
                reported, lost = crash_once(scratch, mode, rng)
                if lost:
                    failures += 1
                    print("FAIL %s crash %d: %d commits reported before the crash, %d of the "
                          "last %d lost after it (commit: value found) %s" % (
                              mode, n + 1, reported, len(lost), FILES,
                              ", ".join("%d: %d" % x for x in lost[:5])))
                else:
                    print("ok   %s crash %d: the %d commits reported before the crash all "
                          "survived it" % (mode, n + 1, reported))
                sys.stdout.flush()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("FAIL " + str(e))
        sys.exit(1)
