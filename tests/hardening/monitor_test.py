#!/usr/bin/env python3
"""The monitor cannot be taken (issue 15, item 10): a tracee tries pidfd_getfd on every
descriptor number of its monitor (the seccomp listener among them), PTRACE_ATTACH and
process_vm_readv on it. On every backend, with monitor and tracee both root and both uid 65534,
none succeeds: pidfd_open or each pidfd_getfd fails with EPERM, the attach and the read fail
with EPERM; the unprivileged monitor is not dumpable (its /proc/PID/mem belongs to root).
Negative control: the same probe against a dumpable process of the same uid (a sleep) takes its
descriptors, attaches and reads, so the probe does detect a process it can take.
Before the fix the monitor was dumpable and a tracee of its uid took the listener."""

import sys

import hardening_common as hc


def parse(out):
    return dict(kv.split("=", 1) for kv in out.split())


def probe_sleep(wrap):
    """The probe natively against a sleeping process of the same uid. SIGKILL ends it even if
    the probe's attach left it stopped (a SIGTERM would wait, and the test hang, until then)."""
    script = 'sleep 20 & p=$!; "$0" $p; kill -KILL $p'
    _, out, _ = hc.run(wrap(["sh", "-c", script, hc.prog("monitorprobe")]), "control probe")
    return parse(out)


def body(scratch):
    as_root = list
    for who, wrap in (("root", as_root), ("uid 65534", hc.as_nobody)):
        r = probe_sleep(wrap)
        hc.check(int(r["getfd_taken"]) >= 3 and r["ptrace_attach"] == "OK" and
                 r["vm_readv"] == "OK",
                 "negative control as %s: the probe cannot take a dumpable process of its own "
                 "uid, so it could not detect an exposed monitor: %r" % (who, r))
        hc.say("control as %s: a dumpable process is taken: %r" % (who, r))

        for backend in hc.BACKENDS:
            for emulate in ("amino", "none"):
                argv = hc.amino_run(backend, [hc.prog("monitorprobe"), "tracer"],
                                    extra=["--emulate", emulate])
                _, out, _ = hc.run(wrap(argv), "probe under %s --emulate=%s as %s (a hang: the "
                                   "probe took hold of its monitor)" % (backend, emulate, who),
                                   timeout=10)
                r = parse(out)
                refused = r["pidfd_open"] == "EPERM" or (
                    r["pidfd_open"] == "OK" and int(r["getfd_eperm"]) == 1024)
                hc.check(refused and int(r["getfd_taken"]) == 0 and
                         r["ptrace_attach"] == "EPERM" and r["vm_readv"] == "EPERM",
                         "%s --emulate=%s as %s: the tracee took hold of its monitor: %r"
                         % (backend, emulate, who, r))
                if wrap is hc.as_nobody:
                    hc.check(r["proc_owner"] == "0",
                             "%s as %s: the monitor is dumpable (/proc/PID/mem owned by %s)"
                             % (backend, who, r["proc_owner"]))
                hc.say("%s --emulate=%s as %s: refused: %s" % (backend, emulate, who, out.strip()))


if __name__ == "__main__":
    sys.exit(hc.main(body))
