#!/usr/bin/env python3
"""Nothing written to a file is lost (issue 15, "data lost silently"): programs/fileexerciser
changes one file through every call that changes bytes or size (the write family, truncate,
fallocate's modes including COLLAPSE_RANGE and INSERT_RANGE, copy_file_range, sendfile, splice,
stores through MAP_SHARED mappings) and checks every read, through descriptors and mappings,
against an in-memory model. It runs natively (the model agrees with the kernel's file system) and
on a mount on every backend, with the same seeds.
Before the fix, bytes copied with copy_file_range into a file once mapped were lost (the mapping
file, not told of them, was written back over them) and the two moving fallocate modes failed
with EOPNOTSUPP. Negative control: a run that forgets one write in its model must fail.

AMINO_EXERCISER_OPS (default 3000) sets the operations per run; AMINO_EXERCISER_SEEDS (default
"1 2 3") the seeds."""

import os
import sys

import hardening_common as hc

OPS = int(os.environ.get("AMINO_EXERCISER_OPS", "3000"))
SEEDS = os.environ.get("AMINO_EXERCISER_SEEDS", "1 2 3").split()
MOVING = ("collapse", "insert")


def exercise(argv, what):
    status, out, err = hc.run(argv, what, timeout=60 + OPS // 100, check=False)
    hc.check(status == 0 and out.startswith("ok "),
             "%s: exit %d\n%s%s" % (what, status, out, err))
    return out.strip()


def unsupported(out):
    for word in out.split():
        if word.startswith("unsupported:"):
            return [kv.split("=")[0] for kv in word[len("unsupported:"):].split(",")]
    return []


def body(scratch):
    exerciser = hc.prog("fileexerciser")
    native = os.path.join(scratch, "native")
    os.mkdir(native)
    status, out, _ = hc.run([exerciser, native, "1", "500", "--plant-loss"], "planted loss",
                            check=False)
    hc.check(status == 1 and out.startswith("FAIL"),
             "negative control: a model that misses one write passed (exit %d): %s" %
             (status, out))
    hc.say("negative control: a planted loss is found: %s" % out.splitlines()[0])
    native_refuses = set()
    for seed in SEEDS:
        out = exercise([exerciser, native, seed, str(OPS)], "native exerciser, seed " + seed)
        native_refuses.update(unsupported(out))
    hc.say("natively: %d operations x %d seeds agree with the model%s" % (
        OPS, len(SEEDS),
        " (this file system refuses %s)" % ",".join(sorted(native_refuses))
        if native_refuses else ""))
    for backend in hc.BACKENDS:
        db = os.path.join(scratch, "db-" + backend)
        mp = os.path.join(scratch, "m-" + backend)
        hc.run([hc.AMINO, "mkfs", db], "mkfs")
        for seed in SEEDS:
            what = "exerciser on a %s mount, seed %s" % (backend, seed)
            out = exercise(hc.amino_run(backend, [exerciser, mp, seed, str(OPS)],
                                        mounts=[(mp, db)]), what)
            refused = [op for op in unsupported(out)]
            hc.check(not refused, "%s: the mount refused %s with EOPNOTSUPP (ext4 serves them)" %
                     (what, ",".join(refused)))
            for op in MOVING:
                hc.check(" %s=0 " % op not in out + " ", "%s: no %s ran: %s" % (what, op, out))
        hc.run([hc.AMINO, "fsck", db], "fsck after the %s runs" % backend)
        hc.say("%s: %d operations x %d seeds agree with the model; fsck clean" % (
            backend, OPS, len(SEEDS)))


if __name__ == "__main__":
    sys.exit(hc.main(body))
