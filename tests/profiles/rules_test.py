#!/usr/bin/env python3
"""The rule language's events and actions on real shells (sh), each beside a negative control
run with no profile, which must leave what the profile run must not.

  session-killed  `file-session`: a shell opens f on descriptor 3, writes, is killed with f
                  still open: f is not there (control: it is)
  session-closed  `file-session`: the same shell closes descriptor 3 before it is killed: f is
                  there, whole
  session-dup     `file-session`: the shell moves f's descriptor to stdout (dup2 then close of
                  3), writes and is killed: the file stays open through stdout, so f is not
                  there (control: it is)
  signal          `on signal USR1 do abort`: a shell writes a, sends itself USR1 (it traps
                  it), writes b, exits 0: b is there, a is not (control: both)
  private         `begin private` at depth 0: the shell's child process writes c outside the
                  shell's transaction, the shell writes p and exits 1: c is there, p is not.
                  (The shell touches the mount only after its child ended: the child's
                  create would wait for the shell's read locks, and the shell for the child.)
  nested          `begin nested` at every exec, commit-if at exit: a child exiting 1 leaves
                  nothing, a sibling exiting 0 commits into the shell's transaction, which
                  commits at its exit 0: only the sibling's file is there
  cp              `cp`: cp -r of a tree that fails on one entry (a directory over a file the
                  destination has) after copying others: the destination is as before
                  (control: the other entries are copied)
  procmail        `procmail`: a real procmail delivers a message to `copy` (a :0c recipe) and
                  then fails to deliver it to its inbox (exit 73): copy is not there (control:
                  it is, and the sender's retry would deliver it twice)
  conflict        `on conflict do kill`: a command waits longer than --lock-timeout (1 s) for a
                  file another command's transaction wrote; the system aborts its transaction
                  and the rule kills it before it goes on (its next command, which writes to a
                  host file, never runs); without the rule the waiting call fails with EDEADLK,
                  the command goes on, and its commit is refused
  threads         `whole-program` on a Python program whose second thread writes t and whose
                  exit status is 1: t is not there (a thread of the owner is in its transaction)
"""

import os
import sys
import textwrap

import profiles_common as pc

mc = pc.mc


def write_profile(scratch, name, text):
    path = os.path.join(scratch.path, name + ".profile")
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


def check(fs, d, profiles, script, want, control_want, status=None):
    """Runs `sh -c script` under profiles, with {d} in it standing for directory d of the
    mount, then with no profile on d-c; the files left must be `want`, and `control_want`
    without a profile."""
    for where, profs, expected in ((d, profiles, want), (d + "-c", [], control_want)):
        fs.run(["mkdir", fs.path(where)])
        rc, out, err = fs.run(["sh", "-c", script.replace("{d}", fs.path(where))], profs,
                              check=False, what="%s under %s" % (d, profs or "no profile"))
        if status is not None and rc != status:
            raise pc.Failure("%s: sh exited %d, expected %d\n%s" % (d, rc, status, err))
        left = fs.files(where)
        if not (expected(left) if callable(expected) else left == expected):
            raise pc.Failure("%s under %s left %r; expected %r" % (
                d, profs or "no profile", left, expected))
    pc.say("%s: %s left, %s without the profile" % (
        d, sorted(want) or "nothing", "as expected" if callable(control_want) else
        sorted(control_want) or "nothing"))


def body(args, scratch):
    fs = pc.Fs(scratch, "fs", args.backend)
    kill_self = 'kill -KILL $$'
    check(fs, "session-killed", ["file-session"],
          "exec 3>{d}/f; echo data >&3; " + kill_self, {}, {"f": b"data\n"}, status=-9)
    check(fs, "session-closed", ["file-session"],
          "exec 3>{d}/f; echo data >&3; exec 3>&-; " + kill_self,
          {"f": b"data\n"}, {"f": b"data\n"}, status=-9)

    check(fs, "session-dup", ["file-session"],
          "exec 3>{d}/f; exec 1>&3; exec 3>&-; echo data; " + kill_self, {}, {"f": b"data\n"},
          status=-9)

    signal_profile = write_profile(scratch, "usr1", """\
        # A process's work is aborted when it receives SIGUSR1.
        on exec when depth == 0 do begin
        on signal USR1 do abort
        on exit do commit-if status == 0
        """)
    check(fs, "signal", [signal_profile],
          "trap 'true' USR1; echo A > {d}/a; kill -USR1 $$; echo B > {d}/b", {"b": b"B\n"},
          {"a": b"A\n", "b": b"B\n"}, status=0)

    private_profile = write_profile(scratch, "private", """\
        on exec when depth == 0 do begin private
        on exit do commit-if status == 0
        """)
    check(fs, "private", [private_profile],
          "sh -c 'echo C > {d}/c'; echo P > {d}/p; exit 1", {"c": b"C\n"},
          {"c": b"C\n", "p": b"P\n"}, status=1)

    nested_profile = write_profile(scratch, "nested", """\
        on exec do begin nested
        on exit do commit-if status == 0
        """)
    check(fs, "nested", [nested_profile],
          "sh -c 'echo X > {d}/x; exit 1'; sh -c 'echo Y > {d}/y'; exit 0", {"y": b"Y\n"},
          {"x": b"X\n", "y": b"Y\n"}, status=0)

    src = scratch.sub("cp-source")
    with open(os.path.join(src, "a"), "w") as f:
        f.write("A\n")
    os.makedirs(os.path.join(src, "b"))
    with open(os.path.join(src, "b", "c"), "w") as f:
        f.write("C\n")
    with open(os.path.join(src, "z"), "w") as f:
        f.write("Z\n")
    check(fs, "cp", ["cp"], "echo old > {d}/b && cp -r %s/. {d}" % src, {"b": b"old\n"},
          {"a": b"A\n", "b": b"old\n", "z": b"Z\n"}, status=1)

    rc = os.path.join(scratch.path, "procmailrc")
    with open(rc, "w") as f:
        # No pauses between procmail's retries (8 s and more each, by default).
        f.write("LOCKSLEEP=0\nSUSPEND=0\nNORESRETRY=0\n"
                "DEFAULT=/nonexistent/default\nORGMAIL=/nonexistent/orgmail\n"
                "LOGFILE=/dev/null\n:0c\ncopy\n:0\n/nonexistent/dir/inbox\n")
    msg = os.path.join(scratch.path, "message")
    with open(msg, "w") as f:
        f.write("From: a@example.org\nTo: b@example.org\nSubject: hello\n\nbody\n")
    check(fs, "procmail", ["procmail"], "procmail -m MAILDIR={d} %s < %s" % (rc, msg), {},
          lambda left: list(left) == ["copy"] and b"Subject: hello" in left["copy"], status=73)

    conflict = write_profile(scratch, "conflict", """\
        on exec when depth > 0 do begin
        on exit do commit-if status == 0
        on conflict do kill
        """)
    no_rule = write_profile(scratch, "no-rule", """\
        on exec when depth > 0 do begin
        on exit do commit-if status == 0
        """)
    for name, profile, want_log in (("conflict", conflict, ""), ("conflict-c", no_rule,
                                                                   "went on\n")):
        log = os.path.join(scratch.path, name + ".log")
        d = fs.path(name)
        fs.run(["mkdir", d])
        script = ("sh -c 'echo held > %s/x; sleep 3' & sleep 0.5; "
                  "sh -c 'cat %s/x; echo went on >> %s'; wait" % (d, d, log))
        rc, out, err = fs.run(["sh", "-c", script], [profile], ["--lock-timeout", "1"],
                              check=False, what="conflict under %s" % name)
        got = pc.file_text(log)
        if got != want_log or set(fs.files(name)) != {"x"}:
            raise pc.Failure("%s: the waiting command logged %r (expected %r) and the mount "
                             "holds %r (expected x only)\n%s" % (
                                 name, got, want_log, sorted(fs.files(name)), err))
        if profile == no_rule and "was aborted by the system" not in err:
            raise pc.Failure("conflict-c: the refused commit was not reported:\n%s" % err)
    pc.say("conflict: the command whose transaction was aborted was killed (without the "
           "rule it went on)")

    threaded = os.path.join(scratch.path, "threaded.py")
    with open(threaded, "w") as f:
        f.write(textwrap.dedent("""\
            import sys, threading
            def work():
                with open("t", "w") as f:
                    f.write("thread\\n")
            th = threading.Thread(target=work)
            th.start()
            th.join()
            sys.exit(1)
            """))
    check(fs, "threads", ["whole-program"], "cd {d} && exec %s %s" % (sys.executable, threaded), {},
          {"t": b"thread\n"}, status=1)
    fs.fsck("the rules")


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__, pc.backend_option))
