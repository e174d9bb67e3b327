#!/usr/bin/env python3
"""Permission checks follow capabilities, not uid 0 (issue 15, item 14), compared with the kernel
on ext4: a uid-0 process with no capabilities (setpriv emptying the bounding set) is refused
reading another user's 0600 file, chmod and chown of it, mknod of a device and creating in
another user's directory; a uid-65534 process holding CAP_DAC_OVERRIDE (an ambient capability)
reads and writes root's 0600 file and creates in root's directory, but may not chmod root's
file (that needs CAP_FOWNER). Each operation's result (OK, EACCES, EPERM) on a mount must equal
the kernel's, on every backend. Before the fix the uid-0 process did everything and the
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
'''


def no_caps_root(argv):
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"] + argv


def dac_override_nobody(argv):
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--inh-caps=+dac_override", "--ambient-caps=+dac_override", "--"] + argv


WHO = (("uid 0 without capabilities", no_caps_root),
       ("uid 65534 with CAP_DAC_OVERRIDE", dac_override_nobody))


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
