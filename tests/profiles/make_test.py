#!/usr/bin/env python3
"""Profiles on a real make whose third recipe command fails (it writes its output, then
exits 1); make stops there with status 2.

  make           under the `make` profile the first two outputs are there, the third is not
  per-command    the same under `per-command`
  whole-program  under `whole-program` none of the outputs is there (make failed)
  control        with no profile the third output is there too: the checks can fail
  success        a Makefile whose commands all succeed under `make`: every output there, and
                 --stats counts one transaction begun and committed per command
"""

import os
import sys

import profiles_common as pc

mc = pc.mc

FAILING = """all:
\techo one > out1
\techo two > out2
\techo three > out3; exit 1
\techo four > out4
"""

GOOD = """all:
\techo one > out1
\tprintf 'two' > out2
\tcat out1 out2 > out3
"""


def body(args, scratch):
    fs = pc.Fs(scratch, "fs", args.backend)
    failing = os.path.join(scratch.path, "Failing.mk")
    good = os.path.join(scratch.path, "Good.mk")
    with open(failing, "w") as f:
        f.write(FAILING)
    with open(good, "w") as f:
        f.write(GOOD)
    cases = [("make", ["make"], {"out1": b"one\n", "out2": b"two\n"}),
             ("per-command", ["per-command"], {"out1": b"one\n", "out2": b"two\n"}),
             ("whole-program", ["whole-program"], {}),
             ("control", [], {"out1": b"one\n", "out2": b"two\n", "out3": b"three\n"})]
    fs.run(["mkdir"] + [fs.path(d) for d, _, _ in cases] + [fs.path("success")])
    for d, profiles, want in cases:
        rc, out, err = fs.run(["make", "-j1", "-f", failing, "-C", fs.path(d)], profiles,
                              check=False, what="make under %s" % (profiles or "no profile"))
        if rc != 2:
            raise pc.Failure("make of the failing Makefile under %s exited %d, expected 2\n%s" % (
                profiles or "no profile", rc, err))
        left = fs.files(d)
        if left != want:
            raise pc.Failure("make whose third command fails, under %s, left %r; expected %r" % (
                profiles or "no profile", left, want))
        pc.say("%s: the failed make left %s" % (d, sorted(left) or "nothing"))

    rc, out, err = fs.run(["make", "-j1", "-f", good, "-C", fs.path("success")], ["make"],
                          ["--stats"], what="make of the good Makefile")
    left = fs.files("success")
    if left != {"out1": b"one\n", "out2": b"two", "out3": b"one\ntwo"}:
        raise pc.Failure("make of the good Makefile under the make profile left %r" % left)
    if "amino: profile make: 3 begun" not in err or ", 3 committed" not in err:
        raise pc.Failure("--stats should count 3 transactions begun and committed:\n%s" % err)
    pc.say("success: every output there, 3 transactions committed")
    fs.fsck("the builds")


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__, pc.backend_option))
