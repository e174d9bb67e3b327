#!/usr/bin/env python3
"""Permission checks follow capabilities, not uid 0 (issue 15, item 14), compared with the kernel
on ext4: a uid-0 process with no capabilities (setpriv emptying the bounding set) is refused
reading another user's 0600 file, chmod and chown of it, mknod of a device and creating in
another user's directory; a uid-65534 process holding CAP_DAC_OVERRIDE (an ambient capability)
reads and writes root's 0600 file and creates in root's directory, but may not chmod root's
file (that needs CAP_FOWNER). Then uid 65534 holding each of the other capabilities the checks
know, one at a time: CAP_DAC_READ_SEARCH (lists and reads in root's 0700 directory, writes
nothing), CAP_FOWNER (chmod and explicit times of root's file), CAP_CHOWN, CAP_FSETID (a
set-group-ID bit kept by chmod outside the file's group, a set-user-ID bit kept by a write),
CAP_MKNOD (a device node in its own directory) and CAP_SYS_ADMIN (trusted.* attributes).
Each operation's result (OK, EACCES, EPERM, or the mode it leaves) on a mount must equal the
kernel's, on every backend. Before the fix the uid-0 process did everything and the
CAP_DAC_OVERRIDE one nothing."""

import os
import shutil
import sys

import hardening_common as hc

SETUP = r'''
set -e
cd "$D"
printf secret > own65534; chown 65534:65534 own65534; chmod 600 own65534
printf rootdata > rootfile; chmod 600 rootfile
mkdir d65534 droot; chown 65534:65534 d65534; chmod 755 d65534 droot
mkdir dpriv; printf private > dpriv/f; chmod 700 dpriv; chmod 600 dpriv/f
printf g > sgid65534; chown 65534:0 sgid65534; chmod 755 sgid65534
printf s > suid65534; chown 65534:65534 suid65534; chmod 4755 suid65534
'''
PROBE = r'''
cd "$D"
r() {
  local name=$1; shift
  if out=$("$@" 2>&1 </dev/null); then echo "$name=OK"; else
    case "$out" in
      *"Permission denied"*) echo "$name=EACCES" ;;
      *"not permitted"*) echo "$name=EPERM" ;;
      *) echo "$name=OTHER" ;;
    esac
  fi
}
r read-other cat own65534
r read-root cat rootfile
r chmod-other chmod 644 own65534
r chmod-root chmod 644 rootfile
r chown-other chown 0 own65534
r mknod-dev mknod droot/null c 1 3
r create-in-other touch d65534/x
r create-in-root touch droot/y
r write-root sh -c 'printf x >> rootfile'
r list-private ls dpriv
r read-private cat dpriv/f
r write-private sh -c 'printf x >> dpriv/f'
r times-root touch -d @0 rootfile
r mknod-own mknod d65534/null c 1 3
r trusted-xattr setfattr -n trusted.amino -v 1 rootfile
r user-xattr-root setfattr -n user.amino -v 1 rootfile
# The mode a call leaves: the kernel drops these bits without CAP_FSETID, and fails nothing.
chmod 2755 sgid65534 2>/dev/null; echo "sgid-by-chmod=$(stat -c %a sgid65534)"
printf x >> suid65534 2>/dev/null; echo "suid-after-write=$(stat -c %a suid65534)"
'''


def no_caps_root(argv):
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"] + argv


def dac_override_nobody(argv):
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--inh-caps=+dac_override", "--ambient-caps=+dac_override", "--"] + argv


def nobody_with(cap):
    def wrap(argv):
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=+" + cap, "--ambient-caps=+" + cap, "--"] + argv
    return wrap


WHO = (("uid 0 without capabilities", no_caps_root),
       ("uid 65534 with CAP_DAC_OVERRIDE", dac_override_nobody),
       ("uid 65534 with CAP_DAC_READ_SEARCH", nobody_with("dac_read_search")),
       ("uid 65534 with CAP_FOWNER", nobody_with("fowner")),
       ("uid 65534 with CAP_CHOWN", nobody_with("chown")),
       ("uid 65534 with CAP_FSETID", nobody_with("fsetid")),
       ("uid 65534 with CAP_MKNOD", nobody_with("mknod")),
       ("uid 65534 with CAP_SYS_ADMIN", nobody_with("sys_admin")))


def results(out):
    return dict(line.split("=", 1) for line in out.split())


def body(scratch):
    if os.geteuid() != 0:
        raise hc.Failure("the probes change uid and capabilities: run this test as root")
    if not shutil.which("setpriv"):
        raise hc.Failure("setpriv (util-linux) is not installed")
    native = {}
    for who, wrap in WHO:
        d = os.path.join(scratch, "native-%d" % len(native))
        os.mkdir(d)
        env = dict(os.environ, D=d)
        hc.run(["bash", "-c", SETUP], "setup natively", env=env)
        _, out, _ = hc.run(wrap(["bash", "-c", PROBE]), "probe natively as " + who, env=env)
        native[who] = results(out)
        hc.say("natively, %s: %s" % (who, " ".join(out.split())))
    # The probes tell the two apart: the control for a monitor that follows uid 0.
    hc.check(native[WHO[0][0]]["read-other"] == "EACCES" and
             native[WHO[1][0]]["read-root"] == "OK",
             "negative control: the kernel did not refuse the capability-less root or did not "
             "let CAP_DAC_OVERRIDE read: %r" % native)
    # Each capability makes a difference the probes see: none of them is untested.
    plain = native["uid 65534 with CAP_CHOWN"]
    for who, key in (("uid 65534 with CAP_DAC_READ_SEARCH", "read-private"),
                     ("uid 65534 with CAP_FOWNER", "times-root"),
                     ("uid 65534 with CAP_FSETID", "sgid-by-chmod"),
                     ("uid 65534 with CAP_MKNOD", "mknod-own"),
                     ("uid 65534 with CAP_SYS_ADMIN", "trusted-xattr")):
        hc.check(native[who][key] != plain[key], "negative control: natively %s and CAP_CHOWN "
                 "give %s the same result, %s" % (who, key, plain[key]))
    hc.check(plain["chown-other"] != native["uid 65534 with CAP_FOWNER"]["chown-other"],
             "negative control: natively CAP_CHOWN made no difference to chown")
    for backend in hc.BACKENDS:
        for i, (who, wrap) in enumerate(WHO):
            db = os.path.join(scratch, "db-%s-%d" % (backend, i))
            mp = os.path.join(scratch, "m-%s-%d" % (backend, i))
            hc.run([hc.AMINO, "mkfs", db], "mkfs")
            env = dict(os.environ, D=mp)
            hc.run(hc.amino_run(backend, ["bash", "-c", SETUP], mounts=[(mp, db)]),
                   "setup on the mount", env=env)
            _, out, _ = hc.run(hc.amino_run(backend, wrap(["bash", "-c", PROBE]),
                                            mounts=[(mp, db)]),
                               "probe on a %s mount as %s" % (backend, who), env=env)
            got = results(out)
            diff = {k: (native[who][k], got.get(k)) for k in native[who]
                    if native[who][k] != got.get(k)}
            hc.check(not diff, "%s, %s: differs from the kernel (native, mount): %r" % (
                backend, who, diff))
        hc.say("%s: every result equals the kernel's" % backend)


if __name__ == "__main__":
    sys.exit(hc.main(body))
