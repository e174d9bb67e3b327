#!/usr/bin/env python3
"""msync writes back the range it names, found through the mapping's offset in the file: a
process maps a file from its third page, stores in two pages of the mapping and msyncs one of
them; while it still holds the mapping (nothing closed, nothing exited), a second `amino run` on
the same database reads the file: the msynced store is there, at the right offset. The other
store is written back at the latest when the first process ends, and then both are there.
Negative control: the same read before the msync's process is started finds neither.
"""

import sys

import mount_common as mc


def check(ok, what):
    if not ok:
        raise mc.Failure(what)


def read_at(mounts, path, offset, length):
    script = ('import os, sys; f = os.open(sys.argv[1], os.O_RDONLY); '
              'sys.stdout.write(os.pread(f, %d, %d).decode())' % (length, offset))
    _, out, _ = mc.run(mc.amino_run(mounts, ["python3", "-c", script, path]),
                       "amino run: read %s at %d" % (path, offset))
    return out


def body(args, scratch):
    db, mp = scratch.sub("db"), scratch.sub("mnt")
    mc.mkfs(db)
    mounts = [(mp, db)]
    f = mp + "/mapped"
    mc.run(mc.amino_run(mounts, ["sh", "-c", "head -c 65536 /dev/zero | tr '\\0' . > " + f]),
           "amino run: make the file")
    before = read_at(mounts, f, 12298, 6) + read_at(mounts, f, 28682, 7)
    check(before == "." * 13, "control: the stores are there before they are made: %r" % before)
    argv = mc.amino_run(mounts, [mc.prog("mapstore"), f])
    proc = mc.subprocess.Popen(argv, stdin=mc.subprocess.PIPE, stdout=mc.subprocess.PIPE,
                               stderr=mc.subprocess.PIPE, start_new_session=True)
    try:
        line = proc.stdout.readline().decode().strip()
        check(line == "ready", "mapstore did not get to its msync: %r (%s)" % (
            line, proc.stderr.read().decode() if proc.poll() is not None else "still running"))
        synced = read_at(mounts, f, 12298, 6)
        check(synced == "SYNCED", "after msync of its page, another monitor reads %r at the "
                 "store's offset instead of 'SYNCED'" % synced)
        mc.say("msync of one page: another monitor reads it at once (%r)" % synced)
        out, err = proc.communicate(input=b"", timeout=min(30, mc.remaining()))
        check(proc.returncode == 0, "mapstore exited %d: %s%s" % (
            proc.returncode, out.decode(), err.decode()))
    finally:
        mc.kill_group(proc.pid)
    after = read_at(mounts, f, 12298, 6) + read_at(mounts, f, 28682, 7)
    check(after == "SYNCEDPENDING", "after the process ended the file holds %r" % after)
    mc.fsck(db)


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__))
