#!/usr/bin/env python3
"""Set-id programs run through a copy nobody can keep (issue 15, item 12). Under a root monitor,
a tracee of uid 65534 in group 4242 runs programs stored in a mount: root:4242 04750 (runs with
euid 0) and root:4243 02755 (runs with egid 4243). On every backend, while they run and after
they and the monitor are gone: no directory of the monitor's program copies belongs to the
tracee's user (who could make it writable and rename a copy out), the tracee's user can neither
make such a directory writable nor rename or link anything in it, and no set-id file created
during the test (a copy of the probe) is left in /dev/shm, /tmp or /var/tmp. The programs are named (comm) as stored;
a failed exec of one leaves the caller no descriptor of the copy. A member of no group 4242 cannot run the
04750 program. Before the fix the set-id copy lay in a directory the caller owned."""

import os
import stat
import subprocess
import sys
import time

import hardening_common as hc

BASES = ["/dev/shm", "/tmp", "/var/tmp"]


def setid_files():
    """Every set-user-ID or set-group-ID regular file under BASES that is a copy of the probe
    (other tests running meanwhile make set-id files of their own)."""
    with open(hc.prog("setidprobe"), "rb") as f:
        probe = f.read()
    found = set()
    for base in BASES:
        for root, dirs, files in os.walk(base):
            for name in files:
                p = os.path.join(root, name)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if (stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID) and
                        st.st_size == len(probe)):
                    try:
                        with open(p, "rb") as f:
                            if f.read() == probe:
                                found.add(p)
                    except OSError:
                        found.add(p)  # a copy nobody may read counts
    return found


def copy_dirs():
    """Directories below the monitors' program-copy roots (amino-exec.*), with their owners."""
    out = {}
    for base in BASES:
        try:
            roots = [os.path.join(base, n) for n in os.listdir(base) if n.startswith("amino-exec.")]
        except OSError:
            continue
        for r in roots:
            for root, dirs, files in os.walk(r):
                for d in dirs:
                    p = os.path.join(root, d)
                    try:
                        out[p] = os.lstat(p).st_uid
                    except OSError:
                        pass
    return out


def as_member(argv):
    return ["setpriv", "--reuid=65534", "--regid=65534", "--groups=4242"] + argv


def attack(d):
    """As the tracee's user: make `d` writable, then rename and link what is in it out."""
    script = ('chmod u+w "$1" 2>/dev/null && echo chmod; for f in "$1"/*; do '
              'mv "$f" /dev/shm/amino-hardening-kept 2>/dev/null && echo mv; '
              'ln "$f" /dev/shm/amino-hardening-kept-ln 2>/dev/null && echo ln; done; true')
    _, out, _ = hc.run(as_member(["sh", "-c", script, "sh", d]), "attack on %s" % d)
    return out.split()


def body(scratch):
    db = os.path.join(scratch, "db")
    mp = os.path.join(scratch, "m")
    hc.run([hc.AMINO, "mkfs", db], "mkfs")
    probe = hc.prog("setidprobe")
    setup = ("cp %s {m}/suid && chown 0:4242 {m}/suid && chmod 4750 {m}/suid && "
             "cp %s {m}/sgid && chown 0:4243 {m}/sgid && chmod 2755 {m}/sgid" % (probe, probe))
    hc.run(hc.amino_run(hc.BACKENDS[0], ["sh", "-c", setup.format(m=mp)], mounts=[(mp, db)]),
           "store the set-id programs")
    before = setid_files()

    for backend in hc.BACKENDS:
        script = "{m}/suid 700 & {m}/sgid 700 & wait".format(m=mp)
        argv = hc.amino_run(backend, as_member(["sh", "-c", script]), mounts=[(mp, db)])
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        seen_dirs, seen_files, attacks = {}, set(), []
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            dirs = copy_dirs()
            seen_dirs.update(dirs)
            seen_files |= setid_files() - before
            for d in dirs:
                if d not in [a[0] for a in attacks]:
                    attacks.append((d, attack(d)))
            time.sleep(0.05)
        try:
            out, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            raise hc.Failure("%s: hang running the set-id programs" % backend)
        out, err = out.decode(), err.decode()
        hc.check(proc.returncode == 0, "%s: exited %d\n%s%s" % (backend, proc.returncode, out, err))
        lines = sorted(out.splitlines())
        hc.check(len(lines) == 2 and
                 any(l.startswith("uid=65534 euid=0 gid=65534 egid=65534 comm=suid ")
                     for l in lines) and
                 any(l.startswith("uid=65534 euid=65534 gid=65534 egid=4243 comm=sgid ")
                     for l in lines),
                 "%s: expected the 04750 program at euid 0 and the 02755 one at egid 4243, got %r"
                 % (backend, lines))
        owned = {d: u for d, u in seen_dirs.items() if u != 0}
        hc.check(not owned, "%s: directories of program copies belong to the tracee's user, who "
                 "can rename a set-id copy out of them: %r" % (backend, owned))
        taken = [(d, r) for d, r in attacks if r]
        hc.check(not taken, "%s: the tracee's user changed a copy directory or took a copy out: %r"
                 % (backend, taken))
        left = setid_files() - before
        hc.check(not left, "%s: set-id files left after the run: %r" % (backend, sorted(left)))
        hc.say("%s: ran at the stored ids (%s); copies seen: %d set-id files, %d directories "
               "(all root's), nothing kept" % (backend, "; ".join(lines), len(seen_files),
                                                len(seen_dirs)))

    # A failed exec of a set-id program leaves the caller no descriptor of its copy.
    for backend in hc.BACKENDS:
        _, out, _ = hc.run(hc.amino_run(backend, as_member([
            hc.prog("setidprobe"), "failexec", os.path.join(mp, "suid")]), mounts=[(mp, db)]),
            "failed exec, %s" % backend)
        hc.check(out == "errno=EFAULT leaked=0\n",
                 "%s: an exec of the set-id program with a bad environment: %r" % (backend, out))

    # Not a member of 4242: the 04750 program is refused, as natively. (Through sh: setpriv
    # itself still holds root's capabilities when it execs, and CAP_DAC_OVERRIDE may run it.)
    rc, out, err = hc.run(hc.amino_run(hc.BACKENDS[0], [
        "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c",
        '"$0"; exit $?', os.path.join(mp, "suid")], mounts=[(mp, db)]), check=False)
    hc.check(rc != 0 and "ermission denied" in err, "a non-member ran the 04750 program: %d %r %r"
             % (rc, out, err))
    for p in ("/dev/shm/amino-hardening-kept", "/dev/shm/amino-hardening-kept-ln"):
        hc.check(not os.path.exists(p), "%s exists: a copy was taken" % p)


if __name__ == "__main__":
    try:
        sys.exit(hc.main(body))
    finally:
        for p in ("/dev/shm/amino-hardening-kept", "/dev/shm/amino-hardening-kept-ln"):
            if os.path.exists(p):
                os.unlink(p)
