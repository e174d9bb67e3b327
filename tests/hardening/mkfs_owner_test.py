#!/usr/bin/env python3
"""A new file system belongs to whoever makes it (issue 18): as uid 65534, `amino mkfs DB`
makes a root directory that user owns, so `amino run --mount` and the default mount ~/amino
(created on first use) let that user create, write and remove files, on every backend.
`--owner UID:GID --mode MODE` set another owner and mode; bad values are refused with a clear
one-line message and create nothing; a missing parent directory is named as the reason.
Before the fix the root was root's 0755 and every creation failed with EACCES."""

import os
import sys

import hardening_common as hc

WORK = "mkdir {m}/d && echo x > {m}/d/f && cat {m}/d/f && rm {m}/d/f && rmdir {m}/d && " \
       "stat -c '%u %g %a' {m}"


def body(scratch):
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    os.chown(home, hc.NOBODY, hc.NOBODY)

    db = os.path.join(home, "db")
    hc.run(hc.as_nobody([hc.AMINO, "mkfs", db], home), "amino mkfs as 65534")
    mp = os.path.join(home, "m")
    for backend in hc.BACKENDS:
        argv = hc.amino_run(backend, ["sh", "-c", WORK.format(m=mp)], mounts=[(mp, db)])
        _, out, _ = hc.run(hc.as_nobody(argv, home), "--mount as 65534, %s" % backend)
        hc.check(out == "x\n65534 65534 755\n",
                 "%s: --mount as 65534: expected 'x' and the root '65534 65534 755', got %r"
                 % (backend, out))

        # The default mount ~/amino, its database made on first use (by the first backend).
        argv = hc.amino_run(backend, ["sh", "-c", WORK.format(m="$HOME/amino")])
        _, out, _ = hc.run(hc.as_nobody(argv, home), "default mount as 65534, %s" % backend)
        hc.check(out == "x\n65534 65534 755\n",
                 "%s: default mount as 65534: expected 'x' and '65534 65534 755', got %r"
                 % (backend, out))
        hc.say("%s: --mount and the default mount work for uid 65534" % backend)
    hc.run([hc.AMINO, "fsck", db], "amino fsck")

    # --owner and --mode (as root).
    db2 = os.path.join(scratch, "db2")
    hc.run([hc.AMINO, "mkfs", "--owner", "1000:1001", "--mode", "1777", db2], "mkfs --owner")
    _, out, _ = hc.run([hc.AMINO, "ls", db2], "amino ls")  # the root is readable: no error
    mp2 = os.path.join(scratch, "m2")
    _, out, _ = hc.run(hc.amino_run(hc.BACKENDS[0], ["stat", "-c", "%u %g %a", mp2],
                                    mounts=[(mp2, db2)]), "stat of the root")
    hc.check(out == "1000 1001 1777\n", "mkfs --owner 1000:1001 --mode 1777: root is %r" % out)
    _, out, _ = hc.run([hc.AMINO, "mkfs", "--help"], "mkfs --help")
    hc.check("--owner" in out and "--mode" in out and "owned by root" not in out,
             "mkfs --help does not describe --owner and --mode:\n" + out)

    for args, word in [(["--owner", "abc"], "--owner"), (["--owner", "1000"], "--owner"),
                       (["--owner", "1:"], "--owner"), (["--owner", "4294967295:0"], "--owner"),
                       (["--owner", "-1:-1"], "--owner"), (["--mode", "8"], "--mode"),
                       (["--mode", "17777"], "--mode"), (["--mode", "rwx"], "--mode")]:
        bad = os.path.join(scratch, "bad")
        rc, out, err = hc.run([hc.AMINO, "mkfs"] + args + [bad], check=False)
        hc.check(rc == 2 and err.count("\n") == 1 and err.startswith("amino mkfs: ") and
                 word in err, "mkfs %s: expected one usage error naming %s, got %d %r"
                 % (" ".join(args), word, rc, err))
        hc.check(not os.path.exists(bad), "mkfs %s created %s" % (" ".join(args), bad))

    rc, _, err = hc.run([hc.AMINO, "mkfs", os.path.join(scratch, "no", "such", "db")],
                        check=False)
    hc.check(rc == 1 and "parent directory" in err,
             "mkfs under a missing parent: expected a message naming the parent, got %r" % err)
    hc.say("--owner, --mode and their errors as expected")


if __name__ == "__main__":
    sys.exit(hc.main(body))
