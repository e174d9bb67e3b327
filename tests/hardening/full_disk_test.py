#!/usr/bin/env python3
"""A full disk under the database (issue 15, item 15): a program that fills a mount is told
ENOSPC as on a kernel file system, not EIO; it can still read, remove files and, once that made
room, write again; the monitor never dies of SIGBUS; an allocation the disk cannot hold fails;
a database on a full disk is refused with a clear message at start; the database stays
consistent with every committed byte. The disk is a small tmpfs (so the test runs as root); the
same program on a native tmpfs of the same size is the control.
"""

import os
import subprocess
import sys

import hardening_common as hc

DISK_MB = 512

# Run natively and under the monitor in directory argv[1]; prints what it found, one fact a line.
WORKER = r'''
import errno, hashlib, os, random, sys, time
d = sys.argv[1]
def content(i):
    return random.Random(i).randbytes(4 << 20)
# Made before the disk fills (a new file may need room of its own, as on ext4).
huge = os.open(os.path.join(d, "huge"), os.O_WRONLY | os.O_CREAT, 0o644)
n = 0
while True:
    try:
        with open(os.path.join(d, "f%d" % n), "wb") as f:
            f.write(content(n))
    except OSError as e:
        print("fill-errno", errno.errorcode.get(e.errno, e.errno))
        break
    n += 1
    if n > 200:
        print("fill-errno none")
        break
print("filled", n)
ok = all(open(os.path.join(d, "f%d" % i), "rb").read() == content(i) for i in range(n))
print("read-back", "ok" if ok else "differs")
try:
    os.posix_fallocate(huge, 0, 1 << 40)
    print("fallocate-1TiB", "succeeded")
except OSError as e:
    print("fallocate-1TiB", errno.errorcode.get(e.errno, e.errno))
os.close(huge)
os.unlink(os.path.join(d, "huge"))
removed = 0
for i in range(1, n, 2):
    try:
        os.unlink(os.path.join(d, "f%d" % i))
        removed += 1
    except OSError as e:
        print("unlink-errno", errno.errorcode.get(e.errno, e.errno))
        break
print("removed", removed, "of", len(range(1, n, 2)))
deadline = time.monotonic() + 5
while True:
    try:
        with open(os.path.join(d, "after"), "wb") as f:
            f.write(b"x" * 100000)
        print("write-after-removal ok")
        break
    except OSError as e:
        if time.monotonic() > deadline:
            print("write-after-removal", errno.errorcode.get(e.errno, e.errno))
            break
        time.sleep(0.1)
# Room removals made is room again: half of what was removed is written back.
want = removed // 2
rewritten = 0
for i in range(want):
    try:
        with open(os.path.join(d, "g%d" % i), "wb") as f:
            f.write(content(1000 + i))
        rewritten += 1
    except OSError as e:
        print("rewrite-errno", errno.errorcode.get(e.errno, e.errno))
        break
print("rewritten", rewritten, "of", want)
st = os.statvfs(d)
print("statfs-avail", "some" if st.f_bavail > 0 else "none")
digest = hashlib.sha256()
for i in range(0, n, 2):
    digest.update(open(os.path.join(d, "f%d" % i), "rb").read())
print("kept-sha256", digest.hexdigest())
'''


def facts(out):
    got = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        got[key] = value
    return got


def tmpfs(path):
    os.makedirs(path)
    hc.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % DISK_MB, "tmpfs", path], "mount tmpfs")


def umount(path):
    subprocess.run(["umount", "-l", path], stderr=subprocess.DEVNULL)


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the test mounts a small tmpfs as the full disk: run it as root")
    worker = os.path.join(scratch, "worker.py")
    with open(worker, "w") as f:
        f.write(WORKER)
    disks = []
    try:
        native = os.path.join(scratch, "native")
        tmpfs(native)
        disks.append(native)
        _, out, _ = hc.run([sys.executable, worker, native], "worker natively", timeout=120)
        want = facts(out)
        hc.say("natively: %s" % want)
        hc.check(want.get("fill-errno") == "ENOSPC" and want.get("read-back") == "ok" and
                 want.get("rewritten", "").partition(" of ")[0] ==
                 want.get("rewritten", "").partition(" of ")[2],
                 "negative control: natively the disk did not fill with ENOSPC, or room removals made was not room again: %s" % want)
        umount(native)
        disks.remove(native)

        for backend in hc.BACKENDS:
            disk = os.path.join(scratch, "disk-" + backend)
            tmpfs(disk)
            disks.append(disk)
            db, mp = os.path.join(disk, "db"), os.path.join(scratch, "mp-" + backend)
            os.mkdir(mp)
            hc.run([hc.AMINO, "mkfs", db], "mkfs")
            status, out, err = hc.run(hc.amino_run(backend, [sys.executable, worker, mp],
                                                   [(mp, db)]),
                                      "worker on %s" % backend, timeout=300, check=False)
            got = facts(out)
            hc.say("%s: exit %d, %s" % (backend, status, got))
            hc.check(status == 0, "%s: exit %d%s\n%s%s" % (
                backend, status, " (killed by signal %d)" % -status if status < 0 else "", out,
                err))
            hc.check(got.get("fill-errno") == "ENOSPC",
                     "%s: filling the mount failed with %s, not ENOSPC as natively\n%s" % (
                         backend, got.get("fill-errno"), err))
            hc.check(int(got.get("filled", 0)) >= 5,
                     "%s: only %s files of 4 MiB fit on a %d MiB disk" % (
                         backend, got.get("filled"), DISK_MB))
            for key in ("read-back", "fallocate-1TiB", "statfs-avail"):
                hc.check(got.get(key) == want.get(key),
                         "%s: %s is %s, natively %s" % (backend, key, got.get(key), want.get(key)))
            removed, _, of = got.get("removed", "0 of ?").partition(" of ")
            hc.check("unlink-errno" not in got and removed == of and int(removed) > 0,
                     "%s: removing files on the full disk: %s (%s)" % (
                         backend, got.get("removed"), got.get("unlink-errno")))
            hc.check(got.get("write-after-removal") == "ok",
                     "%s: writing after the removals: %s" % (
                         backend, got.get("write-after-removal")))
            rewritten, _, of = got.get("rewritten", "0 of ?").partition(" of ")
            hc.check(rewritten == of and int(rewritten) > 0,
                     "%s: writing back half of what was removed: %s (%s)" % (
                         backend, got.get("rewritten"), got.get("rewrite-errno")))
            hc.check("Bus error" not in err and "EIO" not in err, "%s: stderr: %s" % (backend, err))

            # What was committed is what a new run reads.
            check_py = ("import hashlib, os, sys\nd = sys.argv[1]\nn = %s\nh = hashlib.sha256()\n"
                        "for i in range(0, n, 2):\n"
                        "    h.update(open(os.path.join(d, 'f%%d' %% i), 'rb').read())\n"
                        "print(h.hexdigest())\n" % got["filled"])
            _, again, _ = hc.run(hc.amino_run(backend, [sys.executable, "-c", check_py, mp],
                                              [(mp, db)]), "read again", timeout=120)
            hc.check(again.strip() == got.get("kept-sha256"),
                     "%s: the files kept read back differently in a new run" % backend)
            _, fsck, _ = hc.run([hc.AMINO, "fsck", db], "fsck")
            hc.check("consistent" in fsck, "%s: fsck: %s" % (backend, fsck))

            # A disk another process filled: the start is refused, saying why, not killed.
            hog = os.path.join(disk, "hog")
            subprocess.run(["dd", "if=/dev/zero", "of=" + hog, "bs=1M"],
                           stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            full_py = ("import errno, os, sys\nd = sys.argv[1]\n"
                       "print('read', len(open(os.path.join(d, 'f0'), 'rb').read()))\n"
                       "os.unlink(os.path.join(d, 'f2'))\nprint('unlinked')\n"
                       "try:\n    open(os.path.join(d, 'g'), 'wb').write(b'x' * (8 << 20))\n"
                       "    print('wrote')\n"
                       "except OSError as e:\n    print('write', errno.errorcode[e.errno])\n")
            status, out, err = hc.run(hc.amino_run(backend, [sys.executable, "-c", full_py, mp],
                                                   [(mp, db)]),
                                      "run on a full disk", timeout=60, check=False)
            if status == 0:
                # It needed no new room to start: it reads, removes, and is refused room.
                hc.check(out.split() == ["read", str(4 << 20), "unlinked", "write", "ENOSPC"],
                         "%s: on the full disk: %s%s" % (backend, out, err))
                hc.say("%s: a run on the full disk reads, removes, gets ENOSPC" % backend)
            else:
                # Refused at the start, saying why (not killed, not failing calls later).
                hc.check(0 < status < 128 and "cannot open a mount" in err and "is full" in err,
                         "%s: a run on the full disk: exit %d\n%s%s" % (backend, status, out, err))
                hc.say("%s: a run on the full disk: %s" % (backend, err.strip().splitlines()[-1]))
            os.unlink(hog)
            _, fsck, _ = hc.run([hc.AMINO, "fsck", db], "fsck after the full start")
            hc.check("consistent" in fsck, "%s: fsck: %s" % (backend, fsck))
            umount(disk)
            disks.remove(disk)
            hc.say("%s: full disk handled as natively" % backend)
    finally:
        for disk in disks:
            umount(disk)


if __name__ == "__main__":
    sys.exit(hc.main(body))
