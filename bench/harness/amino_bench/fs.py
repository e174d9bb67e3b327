"""File systems on loop devices that the harness creates, mounts and always removes.

Every loop device and mount is recorded in a Resources stack the moment it exists, and
Resources.cleanup() undoes them in reverse order; the driver calls it from `finally`, from
atexit, and after SIGINT/SIGTERM, so an interrupted run leaves nothing mounted or attached.
"""

import os
import subprocess
import time


class FsError(RuntimeError):
    pass


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise FsError("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()))
    return r.stdout


def proc_mounts():
    """[(device, mount point, type, options)] from /proc/mounts (octal escapes decoded)."""
    out = []
    with open("/proc/mounts") as f:
        for line in f:
            w = line.split()
            dec = [bytes(x, "ascii").decode("unicode_escape") for x in w[:4]]
            out.append(tuple(dec))
    return out


def mount_entry(mountpoint):
    mp = os.path.realpath(mountpoint)
    for e in reversed(proc_mounts()):  # the last entry is the one on top
        if e[1] == mp:
            return e
    return None


def drop_caches(flush=()):
    """Drops the page cache, dentries and inodes (clean ones: the file systems under test are
    unmounted at this point, so they have nothing dirty). `flush` names backing files written
    back first, in case the loop device could not use direct I/O. No global sync: on a shared
    machine it would wait for everybody's dirty data."""
    for path in flush:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Resources:
    """Loop devices and mounts created by this process, undone in reverse order."""

    def __init__(self):
        self._stack = []  # ("loop", device) | ("mount", mountpoint)

    def attach(self, backing):
        # Direct I/O keeps the backing file out of the host's page cache, so the loop device
        # behaves like a disk: one cache (the tested file system's), not two.
        try:
            dev = run(["losetup", "-f", "--show", "--direct-io=on", backing]).strip()
        except FsError:
            dev = run(["losetup", "-f", "--show", backing]).strip()
        self._stack.append(("loop", dev))
        return dev

    def detach(self, dev):
        self._remove(("loop", dev))
        run(["losetup", "-d", dev])

    def mount(self, dev, mountpoint, fstype, options):
        os.makedirs(mountpoint, exist_ok=True)
        argv = ["mount", "-t", fstype] + (["-o", options] if options else []) + [dev, mountpoint]
        run(argv)
        self._stack.append(("mount", os.path.realpath(mountpoint)))

    def umount(self, mountpoint):
        mp = os.path.realpath(mountpoint)
        self._remove(("mount", mp))
        _umount(mp)

    def _remove(self, item):
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i] == item:
                del self._stack[i]
                return

    def cleanup(self):
        """Undoes everything still recorded; returns the list of problems (never raises)."""
        problems = []
        while self._stack:
            kind, what = self._stack.pop()
            try:
                if kind == "mount":
                    _umount(what)
                else:
                    run(["losetup", "-d", what])
            except (FsError, OSError) as e:
                problems.append(str(e))
        return problems

    def active(self):
        return list(self._stack)


def _umount(mp):
    # A process that was just killed may hold the file system for a moment.
    for attempt in range(20):
        r = subprocess.run(["umount", mp], capture_output=True, text=True)
        if r.returncode == 0:
            return
        time.sleep(0.1 * (attempt + 1))
    r = subprocess.run(["umount", "-l", mp], capture_output=True, text=True)
    if r.returncode != 0:
        raise FsError("umount %s: %s" % (mp, r.stderr.strip()))


class LoopFs:
    """One file system in a sparse backing file on a loop device."""

    def __init__(self, res, backing, mountpoint, fstype, size_bytes, mkfs_args=()):
        self.res = res
        self.backing = backing
        self.mountpoint = mountpoint
        self.fstype = fstype
        self.size = size_bytes
        self.mkfs_args = list(mkfs_args)
        self.dev = None
        self.options = None

    def create(self):
        with open(self.backing, "wb") as f:
            f.truncate(self.size)
        self.dev = self.res.attach(self.backing)
        run(["mkfs." + self.fstype, "-q", "-F"] + self.mkfs_args + [self.dev])

    def mount(self, options=""):
        self.res.mount(self.dev, self.mountpoint, self.fstype, options)
        self.options = options
        entry = mount_entry(self.mountpoint)
        if entry is None or entry[2] != self.fstype:
            raise FsError("%s is not mounted as %s: /proc/mounts says %s" % (
                self.mountpoint, self.fstype, entry))
        return entry

    def umount(self):
        self.res.umount(self.mountpoint)

    def cold(self, options=None):
        """Remount (with new options if given) after dropping every cache: a cold start."""
        self.umount()
        drop_caches([self.backing])
        return self.mount(self.options if options is None else options)

    def destroy(self):
        if mount_entry(self.mountpoint) is not None:
            self.umount()
        if self.dev:
            self.res.detach(self.dev)
            self.dev = None
        if os.path.exists(self.backing):
            os.unlink(self.backing)

    def device_info(self):
        """Loop device facts for the report."""
        name = os.path.basename(self.dev or "")
        dio = _read("/sys/block/%s/loop/dio" % name)
        return {"device": self.dev, "direct_io": dio == "1"}


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""
