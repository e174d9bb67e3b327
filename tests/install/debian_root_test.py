#!/usr/bin/env python3
"""The Debian package on a fresh Debian 12 (issue 18), run on demand (ctest -L debian-root; it
needs root, debootstrap and the Debian archive, and takes minutes, so the presets leave it out).

A minimal bookworm is made with debootstrap in a scratch directory and entered with chroot, in
a mount namespace of the test's own (its /proc, /sys and /dev/shm vanish with it). Inside, as
root: `apt-get install ./amino_*.deb` brings the package and its Depends from the archive, with
man-db, a C compiler, pkg-config and python3. Then as a new unprivileged user with a fresh HOME
and the stock PATH:
  man      `man amino-run` renders
  txn      `amino run -- sh -c 'amino txn begin; ...; amino txn abort; amino txn begin; ...;
           amino txn commit'` on the default mount: the aborted file is absent, the committed
           one present, seen from a later run
  counter  /usr/share/amino/examples/counter.c built with `pkg-config --cflags --libs amino`:
           four counters of 50 under the installed amino end at 200
  python   a script using `import amino` (the package's module): a transaction that raises is
           undone, one that ends normally is kept
Finally `apt-get purge amino` leaves none of the package's files.

Environment: AMINO_BUILD_DIR (a configured and built tree), AMINO_DEBIAN_MIRROR (default
http://deb.debian.org/debian). Exit status 77 (skipped) when not root or without debootstrap."""

import glob
import os
import shutil
import sys

from install_common import check, main, run, say

BUILD = os.environ.get("AMINO_BUILD_DIR", "")
MIRROR = os.environ.get("AMINO_DEBIAN_MIRROR", "http://deb.debian.org/debian")
USER = "tester"

PYTHON_SCRIPT = r"""
import os, amino
d = os.path.expanduser("~/amino")
with amino.transaction():
    with open(os.path.join(d, "py-kept"), "w") as f:
        f.write("kept\n")
try:
    with amino.transaction():
        with open(os.path.join(d, "py-undone"), "w") as f:
            f.write("undone\n")
        raise RuntimeError("undo")
except RuntimeError:
    pass
print(sorted(n for n in os.listdir(d) if n.startswith("py-")))
"""


def in_root(root, script, what, user=None, timeout=900):
    """Runs `script` with sh in the chroot (as `user`, with a clean environment, when given),
    in a mount namespace holding the chroot's /proc, /sys and /dev/shm; returns its output."""
    if user:
        inner = ("chroot --userspec=%s:%s %s env -i HOME=/home/%s USER=%s LANG=C.UTF-8 "
                 "PATH=/usr/local/bin:/usr/bin:/bin sh -c %s" % (
                     user, user, root, user, user, sh_quote(script)))
    else:
        inner = ("chroot %s env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "
                 "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh -c %s" % (
                     root, sh_quote(script)))
    mounts = ("mount -t proc proc {r}/proc && mount -t sysfs sys {r}/sys && "
              "mount -t tmpfs -o mode=1777 shm {r}/dev/shm && ").format(r=root)
    return run(["unshare", "--mount", "--propagation", "private", "sh", "-c", mounts + inner],
               what, timeout=timeout)


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def body(scratch):
    run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B",
         os.path.join(scratch, "deb")], "cpack -G DEB")
    debs = glob.glob(os.path.join(scratch, "deb", "amino_*.deb"))
    check(len(debs) == 1, "cpack made %r" % debs)
    root = os.path.join(scratch, "root")
    say("debootstrap --variant=minbase bookworm from %s" % MIRROR)
    run(["debootstrap", "--variant=minbase", "bookworm", root, MIRROR], "debootstrap",
        timeout=1800)
    shutil.copy(debs[0], os.path.join(root, "tmp"))
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc", "resolv.conf"))
    deb = "/tmp/" + os.path.basename(debs[0])
    say("apt-get install %s and the tools the checks use" % os.path.basename(deb))
    in_root(root, "apt-get update -q && apt-get install -y -q --no-install-recommends %s man-db "
            "gcc libc6-dev pkg-config python3 && useradd -m %s" % (deb, USER), "apt-get install")
    files = [f for f in in_root(root, "dpkg -L amino", "dpkg -L").split() if f.startswith("/")]
    say("installed: %d paths; Depends: %s" % (len(files), in_root(
        root, "dpkg-query -W -f '${Depends}' amino", "dpkg-query").strip()))

    page = in_root(root, "MANWIDTH=80 man -P cat amino-run", "man amino-run", user=USER)
    check("amino run" in page and "--mount" in page, "man amino-run renders as %r" % page[:300])
    say("man: amino-run(1) renders (%d lines)" % len(page.splitlines()))

    out = in_root(root, "amino run -- sh -c 'cd ~/amino && amino txn begin && echo a > undone && "
                  "amino txn abort && amino txn begin && echo c > kept && amino txn commit' && "
                  "amino run -- ls ~/amino", "amino txn on the default mount", user=USER)
    check(out.split() == ["kept"], "after an aborted and a committed transaction the default "
          "mount holds %r, not ['kept']" % out.split())
    say("txn: the aborted file is absent, the committed one present")

    out = in_root(root, "cc -o /tmp/counter /usr/share/amino/examples/counter.c "
                  "$(pkg-config --cflags --libs amino) && amino run -- sh -c 'for i in 1 2 3 4; "
                  "do /tmp/counter ~/amino/n 50 & done; wait; cat ~/amino/n'",
                  "counter.c built with pkg-config, under amino run", user=USER)
    check(out.split() == ["200"], "four counters of 50 ended at %r, not 200" % out)
    say("counter: built with pkg-config's flags, four counters of 50 ended at 200")

    with open(os.path.join(root, "tmp", "txn.py"), "w") as f:
        f.write(PYTHON_SCRIPT)
    out = in_root(root, "amino run -- python3 /tmp/txn.py", "a Python script under amino run",
                  user=USER)
    check(out.strip() == "['py-kept']", "the Python script's directory holds %r" % out)
    say("python: the transaction that raised was undone, the other kept")

    in_root(root, "apt-get purge -y -q amino", "apt-get purge amino")
    left = [f for f in files if os.path.lexists(os.path.join(root, f.lstrip("/"))) and
            not os.path.isdir(os.path.join(root, f.lstrip("/")))]
    check(not left, "apt-get purge left %r" % left)
    say("purge: none of the package's %d files is left" % len(files))


def start():
    if not BUILD:
        sys.exit("AMINO_BUILD_DIR must be set (ctest sets it)")
    if os.geteuid() != 0 or not shutil.which("debootstrap"):
        print("needs root and debootstrap (scripts/install-deps installs it): skipped")
        return 77
    return main(body, "amino-debian-root-")


if __name__ == "__main__":
    sys.exit(start())
