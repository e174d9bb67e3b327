#!/usr/bin/env python3
"""Profiles on a real tar killed half-way through an extraction (the archive comes through a
pipe that stops in the middle of a big member, so tar waits there; then tar gets SIGKILL).

  tar            under the `tar` profile nothing of the extraction remains
  whole-program  under `whole-program` likewise
  members        under `tar-members` the members before the big one are there, whole, and the
                 big one is not there at all
  control        with no profile the same run leaves the small members and a partial big one:
                 the checks above can tell the difference
  success        a whole archive under `tar` is there, every member exact, and fsck is clean
"""

import io
import os
import signal
import subprocess
import sys
import tarfile
import time

import profiles_common as pc

mc = pc.mc

SMALL = ["m%02d" % i for i in range(5)]
BIG = "m05"
BIG_SIZE = 4 << 20


def archive():
    """The archive's bytes, the members' contents, and the offset in the middle of BIG."""
    contents = {}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for i, name in enumerate(SMALL + [BIG, "m06"]):
            data = (name.encode() * 7000)[:10000 + i] if name != BIG else \
                bytes((j * 7 + 3) % 251 for j in range(BIG_SIZE))
            contents[name] = data
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1700000000
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    big_start = raw.index(contents[BIG][:4096])
    return raw, contents, big_start + BIG_SIZE // 2


def killed_extraction(fs, profiles, dest, raw, middle):
    """Runs tar x under `profiles`, feeding the archive up to `middle`; kills tar once it has
    opened BIG. Returns amino run's status."""
    trace = os.path.join(fs.scratch.path, "%s-%s.trace" % (fs.name, dest))
    argv = fs.argv(["tar", "xf", "-", "-C", fs.path(dest)], profiles, ["--trace=" + trace])
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        proc.stdin.write(raw[:middle])
        proc.stdin.flush()
        pc.wait_for(lambda: ('"%s"' % BIG) in pc.file_text(trace), "tar to open %s" % BIG)
        # tar now copies what the pipe holds of BIG and waits for more.
        time.sleep(0.5)
        tars = pc.children(proc.pid)
        if len(tars) != 1:
            raise pc.Failure("expected tar as amino run's only child, found %r" % tars)
        os.kill(tars[0], signal.SIGKILL)
        proc.stdin.close()
        proc.stdin = None  # communicate() must not flush it
        rc, out, err = mc.finish(proc, argv, "tar x killed")
    except BaseException:
        mc.kill_group(proc.pid)
        raise
    if rc not in (-signal.SIGKILL, 128 + signal.SIGKILL):  # amino run dies as tar did
        raise pc.Failure("amino run of the killed tar exited %d, expected %d\n%s" % (
            rc, 128 + signal.SIGKILL, err))
    return rc


def body(args, scratch):
    raw, contents, middle = archive()
    fs = pc.Fs(scratch, "fs", args.backend)
    dests = ["tar", "whole", "members", "control", "success"]
    fs.run(["mkdir"] + [fs.path(d) for d in dests])

    for dest, profiles in (("tar", ["tar"]), ("whole", ["whole-program"])):
        killed_extraction(fs, profiles, dest, raw, middle)
        left = fs.files(dest)
        if left:
            raise pc.Failure("a tar x killed under --profile %s left %s" % (
                profiles[0], sorted(left)))
        pc.say("%s: a killed extraction left nothing" % profiles[0])

    killed_extraction(fs, ["tar-members"], "members", raw, middle)
    left = fs.files("members")
    if sorted(left) != SMALL or any(left[n] != contents[n] for n in SMALL):
        raise pc.Failure("a tar x killed under --profile tar-members left %s; expected exactly "
                         "the whole members %s" % (
                             {n: len(d) for n, d in left.items()}, SMALL))
    pc.say("tar-members: a killed extraction left only the %d whole members" % len(SMALL))

    killed_extraction(fs, [], "control", raw, middle)
    left = fs.files("control")
    if not set(SMALL) <= set(left) or BIG not in left or len(left[BIG]) >= BIG_SIZE:
        raise pc.Failure("negative control: without a profile the killed tar should leave the "
                         "small members and a partial %s; it left %s" % (
                             BIG, {n: len(d) for n, d in left.items()}))
    pc.say("control: without a profile the killed tar left %d members and %d of %d bytes "
           "of %s" % (len(left) - 1, len(left[BIG]), BIG_SIZE, BIG))

    argv = fs.argv(["tar", "xf", "-", "-C", fs.path("success")], ["tar"], ["--stats"])
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    proc.stdin.write(raw)
    proc.stdin.close()
    proc.stdin = None
    rc, out, err = mc.finish(proc, argv, "tar x of a whole archive")
    if rc != 0:
        raise pc.Failure("tar x of a whole archive under --profile tar exited %d\n%s" % (rc, err))
    if "amino: profile tar: 1 begun" not in err or ", 1 committed" not in err:
        raise pc.Failure("--stats should count one transaction begun and committed:\n%s" % err)
    left = fs.files("success")
    if left != contents:
        raise pc.Failure("tar x of a whole archive under --profile tar left %s" % (
            {n: len(d) for n, d in left.items()}))
    pc.say("success: the whole archive is there, every member exact")
    fs.fsck("the extractions")


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__, pc.backend_option))
