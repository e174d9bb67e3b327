#!/usr/bin/env python3
"""Differential fuzz test of `amino run`: random sequences of file-system calls (fuzz_ops) run
natively in one fresh scratch directory and under `amino run` in another with the same seed;
every line (call, result, errno, digest of data read) and the final tree must match. On the first
mismatch of a seed, the sequence is shrunk by delta debugging over `fuzz_ops --only` to a minimal
failing list of operations, which is printed with both outputs.

Modes (how the second run is made):
  native         natively again: checks that the test itself is deterministic
  notify         amino run --backend notify
  seccomp        amino run --backend seccomp
  ptrace         amino run --backend ptrace
  host-notify    amino run --backend notify --emulate=host
  host-seccomp   amino run --backend seccomp --emulate=host
  host-ptrace    amino run --backend ptrace --emulate=host
  mount          amino run --mount SCRATCH=FS: each run gets a fresh file system FS (`amino
                 mkfs`, then `amino import` of the empty scratch directory, so that its root has
                 the same owner, mode and times), mounted on the second scratch directory; after
                 the run `amino fsck FS` must find it consistent. Details only the same file
                 system type reproduces are left out (fuzz_ops --portable)
  mount-notify, mount-seccomp, mount-ptrace
                 the same with --backend B (mount uses amino's default backend)
  mount:DBDIR    as mount, with the file systems made under DBDIR (kept with --keep)

--user runs fuzz_ops as an unprivileged user (uid and gid 65534, no groups) in scratch
directories that user owns; under amino, amino itself stays root (the monitor must then act
with the tracee's credentials).

Environment: AMINO (the amino binary) and AMINO_FUZZ_PROGRAM (fuzz_ops) are required;
AMINO_FUZZ_SEEDS (N for seeds 1..N, A-B, or A,B,C) and AMINO_FUZZ_OPS override --seeds and
--ops, for long runs by hand.

Exit status: 0 every seed clean, 1 a mismatch (or a failure to run), 2 usage.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from fuzz_compare import FSCK_MARK, Side, first_mismatch, side_by_side

MODE_FLAGS = {
    "native": None,
    "notify": ["--backend", "notify"],
    "seccomp": ["--backend", "seccomp"],
    "ptrace": ["--backend", "ptrace"],
    "host-notify": ["--backend", "notify", "--emulate=host"],
    "host-seccomp": ["--backend", "seccomp", "--emulate=host"],
    "host-ptrace": ["--backend", "ptrace", "--emulate=host"],
}
# Modes on an Amino mount, and the options of `amino run` besides --mount.
MOUNT_FLAGS = {
    "mount": [],
    "mount-notify": ["--backend", "notify"],
    "mount-seccomp": ["--backend", "seccomp"],
    "mount-ptrace": ["--backend", "ptrace"],
}

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "LC_ALL": "C",
       "TZ": "UTC"}
RUN_TIMEOUT = 120.0  # one run of fuzz_ops, natively or under amino


class Fatal(Exception):
    """The test cannot run at all (no --mount in amino, a missing binary, a hung run)."""


def log(*args):
    print(*args, flush=True)


def usage(message):
    print(f"diff_fuzz: {message}", file=sys.stderr)
    sys.exit(2)


def parse_seeds(spec):
    spec = spec.strip()
    if re.fullmatch(r"\d+", spec):
        return list(range(1, int(spec) + 1))
    if re.fullmatch(r"\d+-\d+", spec):
        a, b = map(int, spec.split("-"))
        return list(range(a, b + 1))
    if re.fullmatch(r"\d+(,\d+)*", spec):
        return [int(s) for s in spec.split(",")]
    usage(f"bad seed list {spec!r}: N, A-B or A,B,C")


def only_text(indices):
    """[0,1,2,5] -> "0-2,5"."""
    out, run = [], []
    for i in sorted(indices):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def parse_only(text):
    indices = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        indices.update(range(int(a), int(b or a) + 1))
    return sorted(indices)


class Fuzzer:
    def __init__(self, args):
        self.mode = args.mode
        self.threaded = args.threaded
        self.no_flink = args.no_flink
        # amino run itself as 65534 (implies --user): no mount namespace of the monitor's own.
        self.user_monitor = args.user_monitor
        if self.user_monitor:
            args.user = True
        self.user = args.user
        self.program = os.environ.get("AMINO_FUZZ_PROGRAM")
        self.amino = os.environ.get("AMINO")
        self.deadline = time.monotonic() + args.deadline if args.deadline else None
        self.keep = args.keep
        self.verbose = args.verbose
        self.mount_db = None
        self.mount_flags = None
        self.runs = 0
        if (self.mode not in MODE_FLAGS and self.mode not in MOUNT_FLAGS and
                not self.mode.startswith("mount:")):
            usage(f"unknown mode {self.mode!r}; modes: {', '.join(MODE_FLAGS)}, "
                  f"{', '.join(MOUNT_FLAGS)}, mount:DBDIR")
        if not self.program or not os.access(self.program, os.X_OK):
            raise Fatal("set AMINO_FUZZ_PROGRAM to the fuzz_ops binary")
        if self.mode.startswith("mount:"):
            self.mount_db = os.path.abspath(self.mode.split(":", 1)[1])
            self.mount_flags = MOUNT_FLAGS["mount"]
            self.check_mount_support()
        elif self.mode in MOUNT_FLAGS:
            self.mount_flags = MOUNT_FLAGS[self.mode]
            self.check_mount_support()
        if self.mode != "native" and (not self.amino or not os.access(self.amino, os.X_OK)):
            raise Fatal("set AMINO to the amino binary")
        if self.user and os.geteuid() != 0:
            raise Fatal("--user needs root (to give the scratch directories to uid 65534)")
        self.portable = self.mount_flags is not None
        self.root = tempfile.mkdtemp(prefix="amino-fuzz-")
        os.chmod(self.root, 0o755)
        # HOME of every run: `amino run` makes its default mount there when no --mount is
        # given (the pass-through modes), never in the real home directory.
        home = os.path.join(self.root, "home")
        os.mkdir(home)
        if self.user_monitor:
            os.chown(home, NOBODY, NOBODY)
        self.env = dict(ENV, HOME=home)
        if self.user_monitor and (self.mount_flags is not None or self.mode == "native"):
            usage("--user-monitor is for the modes without a mount of the test's own")
        if self.mount_flags is not None and self.mount_db is None:
            self.mount_db = os.path.join(self.root, "fs")
            os.mkdir(self.mount_db)

    def check_mount_support(self):
        if not self.amino or not os.access(self.amino, os.X_OK):
            raise Fatal("set AMINO to the amino binary")
        out = subprocess.run([self.amino, "run", "--help"], capture_output=True, text=True,
                             env=ENV)
        if "--mount" not in out.stdout:
            raise Fatal(f"{self.amino} run has no --mount option: mode {self.mode} needs Amino "
                        "mounts served by `amino run --mount MOUNTPOINT=DBDIR`, which this amino "
                        "does not offer yet")
        if self.mount_db is not None:
            os.makedirs(self.mount_db, exist_ok=True)

    def cleanup(self):
        if self.keep:
            log(f"scratch directories kept in {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def time_left(self):
        return None if self.deadline is None else self.deadline - time.monotonic()

    # -----------------------------------------------------------------------------------------
    # Running

    def execute(self, argv, what):
        timeout = RUN_TIMEOUT
        left = self.time_left()
        if left is not None:
            timeout = max(1.0, min(timeout, left))
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=self.env, cwd=self.root,
                                    start_new_session=True)
        except OSError as e:
            raise Fatal(f"{what}: cannot run {argv[0]}: {e}")
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise Fatal(f"{what}: still running after {timeout:.0f} s: {' '.join(argv)}\n"
                        f"stderr: {err.decode(errors='replace')[-2000:]}")
        status = 128 - proc.returncode if proc.returncode < 0 else proc.returncode
        return status, out.decode(errors="replace").splitlines(), err.decode(errors="replace")

    def scratch(self, label):
        path = tempfile.mkdtemp(prefix=f"{label}-", dir=self.root)  # same length on each side
        os.chmod(path, 0o755)
        if self.user:
            os.chown(path, NOBODY, NOBODY)
        return path

    def program_args(self, seed, ops, only, scratch):
        args = [self.program, "--seed", str(seed), "--ops", str(ops), "--dir", scratch]
        if only is not None:
            args += ["--only", only_text(only)]
        if self.portable:
            args.append("--portable")
        if self.threaded:
            args.append("--threaded")
        if self.no_flink:
            args.append("--no-flink")
        return (AS_NOBODY if self.user else []) + args

    def listing(self, scratch):
        """The tree as root sees it natively (the program's own listing may lack what its user
        cannot read, and under amino it is made through the monitor)."""
        args = [self.program, "--list-only", "--dir", scratch]
        status, lines, err = self.execute(args, "listing")
        if status != 0:
            raise Fatal(f"listing {scratch} failed ({status}): {err}")
        return lines

    def run_native(self, seed, ops, only, a):
        status, lines, err = self.execute(self.program_args(seed, ops, only, a), "native run")
        tree = None if self.portable else self.listing(a)
        return Side(status, lines, err, tree)

    def run_amino(self, seed, ops, only, b):
        if self.mode == "native":
            status, lines, err = self.execute(self.program_args(seed, ops, only, b), "second run")
            return Side(status, lines, err, self.listing(b))
        if self.mount_db is None:
            argv = [self.amino, "run", *MODE_FLAGS[self.mode], "--"]
            program = self.program_args(seed, ops, only, b)
            if self.user_monitor:
                argv = AS_NOBODY + argv
                program = program[len(AS_NOBODY):]
            status, lines, err = self.execute(argv + program, f"{self.mode} run")
            return Side(status, lines, err, self.listing(b))
        # An Amino mount: a fresh file system on the scratch directory, its root a copy of the
        # empty scratch directory (owner, mode, times), as the native side starts from.
        fs = tempfile.mkdtemp(prefix="fs-", dir=self.mount_db)
        self.must([self.amino, "mkfs", fs], "amino mkfs")
        self.must([self.amino, "import", fs, b], "amino import")
        mount = [self.amino, "run", *self.mount_flags, "--mount", f"{b}={fs}", "--"]
        status, lines, err = self.execute(mount + self.program_args(seed, ops, only, b),
                                          f"{self.mode} run")
        # The schema's invariants must hold after any sequence: a violation is a mismatch of
        # its own (after every operation line, so the operations compare first).
        fsck_status, fsck_out, fsck_err = self.execute([self.amino, "fsck", fs], "amino fsck")
        if fsck_status != 0:
            lines = lines + [f"{FSCK_MARK} {fsck_status}"] + fsck_out + fsck_err.splitlines()
        if not self.keep:
            shutil.rmtree(fs, ignore_errors=True)
        return Side(status, lines, err, None)

    def must(self, argv, what):
        status, lines, err = self.execute(argv, what)
        if status != 0:
            raise Fatal(f"{what} failed ({status}): {' '.join(argv)}\n{err}")

    def compare(self, seed, ops, only=None):
        """Runs both sides; returns (native, other, mismatch), mismatch a Mismatch or None."""
        self.runs += 1
        a, b = self.scratch("a"), self.scratch("b")
        try:
            native = self.run_native(seed, ops, only, a)
            if native.status != 0:
                raise Fatal(f"fuzz_ops failed natively (status {native.status}): "
                            f"{native.stderr}")
            other = self.run_amino(seed, ops, only, b)
        finally:
            if not self.keep:
                shutil.rmtree(a, ignore_errors=True)
                shutil.rmtree(b, ignore_errors=True)
        return native, other, first_mismatch(native, other)

    # -----------------------------------------------------------------------------------------
    # Shrinking

    def shrink(self, seed, ops, indices, target):
        """Delta debugging (ddmin) over the executed operations: a smallest list found whose
        first mismatch is still at operation `target` (None: in the tree or exit status, all
        operation lines alike), so that shrinking keeps to one bug instead of drifting to
        whichever other one is easiest to reach. Stops early at the deadline, keeping the best
        list so far."""
        keep = [target] if target is not None else []
        indices = [i for i in indices if i not in keep]

        def fails(subset):
            left = self.time_left()
            if left is not None and left < 5:
                return None
            _, _, mismatch = self.compare(seed, ops, sorted(subset + keep))
            return mismatch is not None and mismatch.op == target

        if keep:
            alone = fails([])  # many bugs need no preparation at all
            if alone is None:
                return sorted(indices + keep), False
            if alone:
                return keep, True
        current = list(indices)
        n = 2
        while len(current) >= 2:
            chunk = max(1, len(current) // n)
            parts = [current[i:i + chunk] for i in range(0, len(current), chunk)]
            reduced = False
            for part in parts:  # a part alone
                verdict = fails(part)
                if verdict is None:
                    return sorted(current + keep), False
                if verdict:
                    current, n, reduced = part, 2, True
                    break
            if not reduced:
                for i in range(len(parts)):  # everything but a part
                    rest = [x for j, p in enumerate(parts) if j != i for x in p]
                    verdict = fails(rest)
                    if verdict is None:
                        return sorted(current + keep), False
                    if verdict:
                        current, n, reduced = rest, max(n - 1, 2), True
                        break
            if not reduced:
                if n >= len(current):
                    break
                n = min(len(current), n * 2)
        return sorted(current + keep), True

    # -----------------------------------------------------------------------------------------

    def run_seed(self, seed, ops, only=None, go_on=0, seen=None):
        """Compares one seed. Returns (ops clean before the first mismatch, reports). With
        go_on > 0, a mismatching operation is left out (--only) and the comparison goes on, up to
        go_on more times, to find more than one bug per seed; a mismatch whose signature (call,
        native result, amino result) is in `seen` is reported in one line instead of shrunk."""
        executed = list(only) if only is not None else list(range(ops))
        seen = seen if seen is not None else {}
        clean, reports = None, []
        for _ in range(go_on + 1):
            native, other, mismatch = self.compare(seed, ops, executed)
            if mismatch is None:
                break
            if clean is None:
                clean = len([i for i in executed if mismatch.op is None or i < mismatch.op])
            if mismatch.signature in seen:
                reports.append(f"mismatch {self.label()} seed {seed} op {mismatch.op}: "
                               f"{mismatch.signature} (as seed {seen[mismatch.signature]})")
            else:
                seen[mismatch.signature] = seed
                reports.append(self.report(seed, ops, executed, native, other, mismatch))
            if mismatch.op is None:
                break
            executed.remove(mismatch.op)
        return (len(executed) if clean is None else clean), reports

    def report(self, seed, ops, executed, native, other, mismatch):
        """The mismatch, shrunk to a minimal list of operations, with both outputs."""
        report = [f"MISMATCH {self.label()} seed {seed}: {mismatch.signature}: {mismatch.text}"]
        # Only the operations up to the first differing one can matter.
        candidates = [i for i in executed if mismatch.op is None or i <= mismatch.op]
        _, _, still = self.compare(seed, ops, candidates)
        if still is None or still.op != mismatch.op:
            report.append("  (not reproduced by the same operations again: nondeterministic)")
            report += side_by_side(native, other)
            return "\n".join(report)
        minimal, complete = self.shrink(seed, ops, candidates, mismatch.op)
        native, other, last = self.compare(seed, ops, minimal)
        report.append(f"  shrunk to {len(minimal)} op(s){'' if complete else ' (deadline: partly)'}"
                      f": --only {only_text(minimal)}")
        if last is not None:
            report.append(f"  first difference: {last.text}")
        report += side_by_side(native, other)
        report.append(f"  reproduce: {self.reproduce(seed, ops, minimal)}")
        return "\n".join(report)

    def label(self):
        return (self.mode + (" (user 65534)" if self.user else "") +
                (" (monitor 65534)" if self.user_monitor else "") +
                (" (threaded)" if self.threaded else ""))

    def reproduce(self, seed, ops, only):
        return (f"AMINO={self.amino} AMINO_FUZZ_PROGRAM={self.program} "
                f"{sys.executable} {os.path.abspath(__file__)} --mode {self.mode}"
                f"{' --user' if self.user else ''}{' --user-monitor' if self.user_monitor else ''}"
                f"{' --threaded' if self.threaded else ''}{' --no-flink' if self.no_flink else ''}"
                f" --seed {seed} --ops {ops}"
                f" --only {only_text(only)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", required=True, help="one of: " + ", ".join(MODE_FLAGS) +
                        ", " + ", ".join(MOUNT_FLAGS) + ", mount:DBDIR")
    parser.add_argument("--user", action="store_true", help="run fuzz_ops as uid/gid 65534")
    parser.add_argument("--user-monitor", action="store_true",
                        help="run amino itself as uid/gid 65534 too (pass-through modes)")
    parser.add_argument("--no-flink", action="store_true",
                        help="linkat never gets AT_EMPTY_PATH (README: the host emulation's opens)")
    parser.add_argument("--threaded", action="store_true",
                        help="fuzz_ops runs a second, idle thread (a task sharing its memory)")
    parser.add_argument("--seeds", default="10", help="N (1..N), A-B or A,B,C")
    parser.add_argument("--seed", type=int, help="this one seed (overrides --seeds)")
    parser.add_argument("--ops", type=int, default=300, help="operations per seed")
    parser.add_argument("--only", help="execute only these operations (e.g. 3,17-20)")
    parser.add_argument("--deadline", type=float, help="seconds: stop (failing) past it")
    parser.add_argument("--continue", dest="go_on", type=int, default=0, metavar="N",
                        help="after a mismatch, leave its operation out and go on, up to N "
                        "times per seed (to find several bugs per seed)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directories")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    seeds = ([args.seed] if args.seed is not None else
             parse_seeds(os.environ.get("AMINO_FUZZ_SEEDS") or args.seeds))
    ops = int(os.environ.get("AMINO_FUZZ_OPS") or args.ops)
    only = parse_only(args.only) if args.only else None
    start = time.monotonic()
    try:
        fuzzer = Fuzzer(args)
    except Fatal as e:
        log(f"diff_fuzz: {e}")
        return 1
    # First every seed once (cheap), so that the count of clean operations is complete even
    # when shrinking runs out of time; then the failures, shrunk while time remains.
    clean_total, failed, reports, done, seen = 0, [], [], 0, {}
    try:
        first = {}
        for seed in seeds:
            left = fuzzer.time_left()
            if left is not None and left < 1:
                reports.append(f"deadline reached after {done} of {len(seeds)} seeds")
                log(reports[-1])
                break
            t0 = time.monotonic()
            native, other, mismatch = fuzzer.compare(seed, ops, only)
            executed = only if only is not None else list(range(ops))
            clean = len([i for i in executed if mismatch is None or mismatch.op is None or
                         i < mismatch.op])
            done += 1
            clean_total += clean
            if args.verbose or mismatch:
                log(f"seed {seed}: {clean} ops clean"
                    f"{', then ' + mismatch.signature if mismatch else ''}"
                    f" ({time.monotonic() - t0:.1f} s)")
            if mismatch:
                failed.append(seed)
                first[seed] = mismatch
        for seed in failed:
            left = fuzzer.time_left()
            if left is not None and left < 10:
                m = first[seed]
                reports.append(f"MISMATCH {fuzzer.label()} seed {seed} (not shrunk: deadline): "
                               f"{m.signature}: {m.text}")
                log(reports[-1])
                continue
            _, found = fuzzer.run_seed(seed, ops, only, args.go_on, seen)
            reports += found
            for r in found:
                log(r)
    except Fatal as e:
        reports.append(f"diff_fuzz: {e}")
        log(reports[-1])
    finally:
        fuzzer.cleanup()
    elapsed = time.monotonic() - start
    if seen:
        log("distinct mismatches (call native/amino: first seed): " +
            "; ".join(f"{sig}: {seed}" for sig, seed in seen.items()))
    log(f"{fuzzer.label()}: {done} seeds x {ops if only is None else len(only)} ops, "
        f"{clean_total} ops ran clean, {len(failed)} seed(s) mismatched"
        f"{' ' + str(failed) if failed else ''}; {fuzzer.runs} comparisons in {elapsed:.1f} s")
    return 0 if not reports else 1


if __name__ == "__main__":
    sys.exit(main())
