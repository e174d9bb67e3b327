#!/usr/bin/env python3
"""`amino profile` and `amino run --profile` as a user meets them.

  list     `amino profile list` names every shipped profile with its description, exit 0
  check    a shipped name and a good file: exit 0, "good"; a file with two bad lines: exit 1,
           one FILE:LINE:COL error per bad line on stderr
  run      `amino run --profile` with an unknown name, a bad file, or --emulate=host: exit 2
           with the reason, and the command never runs
  trace    --trace prints the begin and commit of a whole-program run with the rule's place
  unfound  a per-function profile naming a function no program has says so at the end
"""

import os
import sys

import profiles_common as pc

mc = pc.mc

SHIPPED = ["cp", "file-session", "make", "passwd-tools", "per-command", "per-function",
           "procmail", "tar", "tar-members", "whole-program"]


def body(args, scratch):
    rc, out, err = mc.run([mc.AMINO, "profile", "list"], "amino profile list")
    for name in SHIPPED:
        if "\n%s\n" % name not in "\n" + out:
            raise pc.Failure("amino profile list does not name %s:\n%s" % (name, out))
    if out.count("\n    ") < 2 * len(SHIPPED):
        raise pc.Failure("amino profile list should give each profile's path and "
                         "description:\n%s" % out)
    pc.say("list: %d shipped profiles with descriptions" % len(SHIPPED))

    good = os.path.join(scratch.path, "good.profile")
    with open(good, "w") as f:
        f.write("on exec tar do begin\non exit do commit-if status == 0\n")
    rc, out, err = mc.run([mc.AMINO, "profile", "check", "whole-program", good], "check good")
    if "good" not in out:
        raise pc.Failure("amino profile check of good profiles printed %r" % out)
    bad = os.path.join(scratch.path, "bad.profile")
    with open(bad, "w") as f:
        f.write("# two mistakes\non exec do begn\non exit when count == 0 do abort\n"
                "on exit do commit\n")
    rc, out, err = mc.run([mc.AMINO, "profile", "check", bad], "check bad", check=False)
    want = ["%s:2:12: expected an action" % bad, "%s:3:14: 'count' has no value at exit" % bad]
    if rc != 1 or any(w not in err for w in want) or len(err.strip().splitlines()) != 2:
        raise pc.Failure("amino profile check of a profile with two bad lines exited %d with "
                         "stderr:\n%s\nexpected exit 1 and exactly:\n%s" % (
                             rc, err, "\n".join(want)))
    pc.say("check: good ones pass, each bad line located")

    fs = pc.Fs(scratch, "fs")
    marker = fs.path("ran")
    for what, profiles, extra, reason in (
            ("an unknown profile", ["no-such-profile"], [], "no profile named 'no-such-profile'"),
            ("a bad profile file", [bad], [], "%s:2:12" % bad),
            ("--emulate=host", ["whole-program"], ["--emulate=host"], "needs --emulate=amino")):
        cmd = [mc.AMINO, "run", "--profile", profiles[0]] + extra + ["--", "touch", marker]
        if not extra:
            cmd = fs.argv(["touch", marker], profiles)
        rc, out, err = mc.run(cmd, "amino run with %s" % what, check=False)
        if rc != 2 or reason not in err or fs.files():
            raise pc.Failure("amino run --profile with %s exited %d (stderr %r); expected 2, "
                             "%r, and the command not run" % (what, rc, err, reason))
    pc.say("run: unknown, bad and misplaced profiles refused before the command runs")

    trace = os.path.join(scratch.path, "trace")
    fs.run(["sh", "-c", "echo x > %s" % fs.path("x")], ["whole-program"], ["--trace=" + trace])
    text = pc.file_text(trace)
    for line in ("profile whole-program: begin transaction", "/sh (",
                 "whole-program.profile:4:1)", "profile whole-program: commit transaction",
                 "/sh with status 0 ("):
        if line not in text:
            raise pc.Failure("--trace should show %r:\n%s" % (
                line, "\n".join(l for l in text.splitlines() if "profile" in l)))
    pc.say("trace: begin and commit shown with their events and rules")

    rc, out, err = fs.run(["true"], ["per-function:no_such_function"], check=False)
    if rc != 0 or "no function matching 'no_such_function' was found" not in err:
        raise pc.Failure("a per-function profile on a function nobody defines should say so; "
                         "amino run exited %d with stderr %r" % (rc, err))
    pc.say("unfound: a function no program defines is reported")


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__))
