#!/usr/bin/env python3
"""Function rules (`per-function:SYMBOL`, int3 breakpoints at a function's entry, its return
caught where it returns to) on a C program (programs/funcs.c), each mode beside a run with no
profile, which must leave what the profile run must not. Under `per-function:update` (or
lib_update, rec, jumper, forker), one call is one transaction: a negative result aborts it.

  basic      update(a) returns 0, update(b) -1, c is written outside: a and c stay, b does not
             -- in the program as built (-O0, push %rbp first), built with -fcf-protection
             (endbr64 first), and stripped to its dynamic symbols
  recursive  rec(3) writes r3 and calls rec(2), ... rec(0); the call for 2 returns -1: only r3
             stays (the calls inside the failed one committed into it, and went with it)
  threads    4 threads call update() 10 times each at once, every other call failing (a call
             the system aborts for a conflict is made again): exactly the even calls' files
  longjmp    jumper() writes j (by update()) and leaves by longjmp; then update(k), under a
             profile watching both: j is gone (the call left by longjmp is aborted at the
             thread's next watched call), k stays
  fork       a call that forks a child writing a file (and one whose child execs a shell that
             writes it), then writes its own: with result 0 both stay, with -1 neither
  tailcall   tail_outer() ends by jumping to update() (a tail call, both watched): its file
             stays when the result is 0 and not when it is -1, and the program runs on
  library    lib_update() of a shared library: l0 (0) stays, l1 (-1) does not

C++ exceptions leaving watched calls (programs/throws.cc, every function watched; the program
must run as it does natively, its exceptions caught where they are):
  through    save(s1) throws to main, save(s2) returns: s1 is gone (left by the exception),
             s2 stays
  inside     catcher(c) calls save(c-inner), which throws; catcher catches it and returns 0:
             c stays, c-inner does not
  rethrow    rethrower(r) catches save(r-inner)'s exception and throws it again to main, which
             calls save(r2): only r2 stays
  deep       deep(3) .. deep(0) recursively; deep(0) throws, deep(2) catches: x3 and x2 stay,
             x1 and x0 do not
  cancel     quitter(q) ends its thread with pthread_exit (a forced unwind), then main calls
             save(q2): only q2 stays
"""

import os
import sys

import profiles_common as pc

mc = pc.mc
PROGRAMS = os.environ.get("AMINO_PROFILE_PROGRAMS", "")

CASES = [
    # (name, program, mode, symbol, files with the profile, files without)
    ("basic", "funcs-plain", "basic", "update", {"a", "c"}, {"a", "b", "c"}),
    ("basic-cet", "funcs-cet", "basic", "update", {"a", "c"}, {"a", "b", "c"}),
    ("basic-stripped", "funcs-stripped", "basic", "update", {"a", "c"}, {"a", "b", "c"}),
    ("recursive", "funcs-plain", "recursive", "rec", {"r3"}, {"r3", "r2", "r1", "r0"}),
    ("threads", "funcs-plain", "threads", "update",
     {"t%d-%d" % (k, i) for k in range(4) for i in range(0, 10, 2)},
     {"t%d-%d" % (k, i) for k in range(4) for i in range(10)}),
    ("longjmp", "funcs-plain", "longjmp", "jumper,update", {"k"}, {"j", "k"}),
    ("fork", "funcs-plain", "fork", "forker", {"f0-child", "f0-parent"},
     {"f0-child", "f0-parent", "f1-child", "f1-parent", "e1-child", "e1-parent"}),
    ("tailcall", "funcs-plain", "tailcall", "tail_outer,update", {"tc"}, {"tc", "td"}),
    ("library", "funcs-plain", "library", "lib_update", {"l0"}, {"l0", "l1"}),
    ("through", "throws", "through", "save", {"s2"}, {"s1", "s2"}),
    ("inside", "throws", "inside", "catcher,save", {"c"}, {"c", "c-inner"}),
    ("rethrow", "throws", "rethrow", "rethrower,save", {"r2"}, {"r", "r-inner", "r2"}),
    ("deep", "throws", "deep", "deep", {"x3", "x2"}, {"x3", "x2", "x1", "x0"}),
    ("cancel", "throws", "cancel", "quitter,save", {"q2"}, {"q", "q2"}),
]


def body(args, scratch):
    if not PROGRAMS:
        raise pc.Failure("AMINO_PROFILE_PROGRAMS is not set (ctest sets it)")
    fs = pc.Fs(scratch, "fs", args.backend)
    fs.run(["mkdir"] + [fs.path(c[0]) for c in CASES] + [fs.path(c[0] + "-c") for c in CASES])
    for name, program, mode, symbol, want, control in CASES:
        argv = [os.path.join(PROGRAMS, program), mode]
        profile = "per-function:" + symbol
        if "," in symbol:
            # per-function for several functions: one file with each one's rules.
            profile = os.path.join(scratch.path, name + ".profile")
            with open(profile, "w") as f:
                for fn in symbol.split(","):
                    f.write("on call %s do begin nested\n" % fn)
                    f.write("on return %s do commit-if result >= 0\n" % fn)
        for d, profiles, expected in ((name, [profile], want),
                                      (name + "-c", [], control)):
            rc, out, err = fs.run(argv + [fs.path(d)], profiles, ["--stats"], check=False,
                                  what="%s under %s" % (name, profiles or "no profile"))
            if rc != 0:
                raise pc.Failure("%s %s under %s exited %d\n%s" % (
                    program, mode, profiles or "no profile", rc, err))
            if "cannot watch" in err or "no function matching" in err:
                raise pc.Failure("%s: the function was not watched:\n%s" % (name, err))
            left = set(fs.files(d))
            if left != expected:
                raise pc.Failure("%s under %s left %s; expected %s" % (
                    name, profiles or "no profile", sorted(left), sorted(expected)))
        pc.say("%s: %s left (%d without the profile)" % (name, sorted(want), len(control)))
    fs.fsck("the function profiles")


if __name__ == "__main__":
    sys.exit(mc.main(body, __doc__, pc.backend_option))
