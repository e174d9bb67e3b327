"""Shared machinery of the `amino run` integration tests.

A scenario is a command plus the files it starts from. It runs natively in one fresh scratch
directory and under `amino run` in another with identical contents; the two runs must agree on
stdout, stderr (the scratch path normalised), exit status and the file tree left behind.

Modes (how the second run is made):
  native        the command natively again: checks that the scenario itself is deterministic
  notify        amino run --backend notify
  seccomp       amino run --backend seccomp
  ptrace        amino run --backend ptrace
  host-notify   amino run --backend notify --emulate=host
  host-seccomp  amino run --backend seccomp --emulate=host
  host-ptrace   amino run --backend ptrace --emulate=host
  mount-notify  amino run --backend notify --mount SCRATCH=DB, its cwd on the mount
  mount-seccomp amino run --backend seccomp --mount SCRATCH=DB
  mount-ptrace  amino run --backend ptrace --mount SCRATCH=DB
  kernel, host-kernel, mount-kernel
                the same with --backend kernel: only on a kernel with kernel-patches/ applied
                (kernel-patches/run-vm runs them in a VM); never among the default modes

In the mount modes the scratch directory is an Amino mount: its starting files are imported into
a fresh file system DB (`amino mkfs`, `amino import`: modes, owners, times, links and extended
attributes kept), the command runs with its working directory on the mount point, and afterwards
the file system is exported back into the scratch directory (which must have stayed empty on the
host) and compared like any other run; `amino fsck DB` must find it consistent. The pass-through
modes (notify, seccomp, ptrace) serve the default mount, ~/amino in the test's HOME (made by
their first run): calls on the scratch directory must pass through it unseen.

A driver runs the modes given by `--mode A,B` (ctest passes one), narrowed by the environment
variable AMINO_IT_MODES when it is set; by default every mode but native. AMINO_IT_LARGE=1 makes
the scenarios with a size use a bigger one.
"""

import collections
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

# Re-exported: the scenario tests import them from here.
from itprocs import alive, process_state, wait_for  # noqa: F401
from ittree import (FIXED_TIME, diff_trees, first_difference, set_fixed_times,  # noqa: F401
                    snapshot, write)

AMINO = os.environ.get("AMINO")
PROGRAMS = os.environ.get("AMINO_IT_PROGRAMS")
LARGE = os.environ.get("AMINO_IT_LARGE") == "1"

MODE_FLAGS = {
    "native": None,
    "notify": ["--backend", "notify"],
    "seccomp": ["--backend", "seccomp"],
    "ptrace": ["--backend", "ptrace"],
    "host-notify": ["--backend", "notify", "--emulate=host"],
    "host-seccomp": ["--backend", "seccomp", "--emulate=host"],
    "host-ptrace": ["--backend", "ptrace", "--emulate=host"],
    "mount-notify": ["--backend", "notify"],
    "mount-seccomp": ["--backend", "seccomp"],
    "mount-ptrace": ["--backend", "ptrace"],
    "kernel": ["--backend", "kernel"],
    "host-kernel": ["--backend", "kernel", "--emulate=host"],
    "mount-kernel": ["--backend", "kernel"],
}
# The modes whose scratch directory is an Amino mount (amino_prefix adds its --mount).
MOUNT_MODES = ("mount-notify", "mount-seccomp", "mount-ptrace", "mount-kernel")
DEFAULT_MODES = ["notify", "seccomp", "ptrace", "host-notify", "host-seccomp", "host-ptrace",
                 *MOUNT_MODES]
MODES = list(DEFAULT_MODES)

# From --deadline SECONDS: no command runs past it, so that a hung command is killed by the
# driver (with its whole process group) before ctest's own timeout kills only the driver.
DEADLINE = None

# ctest's SKIP_RETURN_CODE: the driver was registered for a mode AMINO_IT_MODES leaves out.
SKIP_CODE = 77

# Every file the scenarios start from carries this mtime, so listings that show times agree.

# mount_problems: what went wrong with the Amino mount of the run (mount modes), as messages.
Outcome = collections.namedtuple("Outcome", "status stdout stderr tree scratch mount_problems",
                                 defaults=((),))

# Time limit of one `amino mkfs`, `import`, `export` or `fsck`.
TOOL_TIMEOUT = 120


def main():
    """Entry point of a driver: selects the modes, then runs its unittest cases."""
    global MODES
    argv = [sys.argv[0]]
    requested = None
    args = iter(sys.argv[1:])
    global DEADLINE
    for a in args:
        if a == "--mode":
            requested = next(args).split(",")
        elif a.startswith("--mode="):
            requested = a.split("=", 1)[1].split(",")
        elif a == "--deadline":
            DEADLINE = time.monotonic() + float(next(args))
        else:
            argv.append(a)
    modes = requested if requested is not None else list(DEFAULT_MODES)
    env_modes = os.environ.get("AMINO_IT_MODES")
    wanted = [m.strip() for m in (env_modes or "").split(",") if m.strip()]
    unknown = [m for m in modes + wanted if m not in MODE_FLAGS]
    if unknown:
        sys.exit(f"unknown mode(s) {unknown}; modes are {list(MODE_FLAGS)}")
    if wanted:
        modes = [m for m in wanted if m in modes] if requested is not None else wanted
    if not modes:
        print(f"mode(s) {requested} not selected by AMINO_IT_MODES={env_modes}")
        sys.exit(SKIP_CODE)
    MODES = modes
    print(f"modes: {', '.join(MODES)}", file=sys.stderr)
    unittest.main(argv=argv)


def amino_prefix(mode, amino_args=(), scratch=None):
    """The words before the command in mode. A mount mode mounts scratch (default: the scratch
    directory made last), turning it into an Amino mount first if it is not one yet."""
    flags = MODE_FLAGS[mode]
    if flags is None:
        return []
    mount = []
    if mode in MOUNT_MODES:
        point = scratch or (_SCRATCHES[-1] if _SCRATCHES else None)
        if point is None:
            raise AssertionError(f"{mode}: no scratch directory to mount")
        mount = ["--mount", f"{point}={make_mount(point).db}"]
    return [AMINO, "run", *flags, *mount, *amino_args, "--"]


# ---------------------------------------------------------------------------------------------
# Amino mounts (the mount modes)

# Every scratch directory made, in order, and those turned into Amino mounts (by path).
_SCRATCHES = []
_MOUNTS = {}


class AminoMount:
    """A scratch directory served from an Amino file system in `db`, next to it."""

    def __init__(self, point):
        self.point = point
        self.db = os.path.join(os.path.dirname(point), "db-" + os.path.basename(point))
        self.settled = False   # exported back into `point` after the run
        self.problems = []     # found when settling; reported by assertSameOutcome or cleanup
        self.reported = False
        self.skeleton = []     # host directories made under point so that a cwd can be there


def amino_tool(args, what):
    """Runs `amino ARGS` to completion; returns (status, combined output)."""
    proc = subprocess.run([AMINO, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT)
    return proc.returncode, proc.stdout.decode(errors="replace")


def must(args, what):
    status, out = amino_tool(args, what)
    if status != 0:
        raise AssertionError(f"{what}: amino {' '.join(args)} exited {status}:\n{out}")
    return out


def clear_directory(path):
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)


def make_mount(point):
    """Turns the scratch directory `point` into an Amino mount (once): its contents, the
    directory's own attributes included, go into a fresh file system, and the host directory is
    left empty (the mount hides it; anything found there later was written past the mount)."""
    mount = _MOUNTS.get(point)
    if mount is None:
        mount = AminoMount(point)
        must(["mkfs", mount.db], "making the file system of the mount")
        must(["import", mount.db, point], "importing the starting files into the mount")
        clear_directory(point)
        _MOUNTS[point] = mount
    return mount


def mount_of(path):
    """The Amino mount (still serving, not yet exported) that holds the host path, or None."""
    for point, mount in _MOUNTS.items():
        if not mount.settled and (path == point or path.startswith(point + "/")):
            return mount
    return None


def _live(path, look):
    """look(copy) on path inside a serving Amino mount, through a copy of the file system
    exported to a temporary directory while the monitor may still use it."""
    mount = mount_of(path)
    copy = tempfile.mkdtemp(prefix="live-", dir=os.path.dirname(mount.point))
    try:
        must(["export", mount.db, copy], "reading a serving mount")
        return look(os.path.join(copy, os.path.relpath(path, mount.point)))
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def read_live(path):
    """The contents of path inside a serving Amino mount, or None when it does not exist."""
    def look(copy):
        try:
            with open(copy, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None
    return _live(path, look)


def exists(path):
    """os.path.lexists, inside a serving Amino mount too (for `during` callbacks)."""
    return _live(path, os.path.lexists) if mount_of(path) else os.path.lexists(path)


def touch(path):
    """Creates the empty file path, inside a serving Amino mount too (through a second
    monitor on the same file system)."""
    mount = mount_of(path)
    if mount is None:
        open(path, "w").close()
        return
    proc = subprocess.run([AMINO, "run", "--mount", f"{mount.point}={mount.db}", "--", "touch",
                           path], stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=TOOL_TIMEOUT)
    if proc.returncode != 0:
        raise AssertionError(f"touch {path} in the mount: {proc.stderr.decode(errors='replace')}")


def settle_mount(point):
    """After a run on the mount at point: the file system is checked (`amino fsck`) and copied
    back into the scratch directory. Returns the problems found (also kept on the mount)."""
    mount = _MOUNTS[point]
    problems = []
    for path in sorted(mount.skeleton, key=len, reverse=True):
        try:
            os.rmdir(path)
        except OSError:
            pass  # not empty: written past the mount, reported below
    leaked = sorted(os.listdir(point))
    if leaked:
        problems.append(f"written to the host directory under the mount point instead of the "
                        f"mount: {leaked[:20]}")
        clear_directory(point)
    status, out = amino_tool(["fsck", mount.db], "amino fsck")
    if status != 0:
        problems.append(f"amino fsck {mount.db} exited {status}:\n{out[-3000:]}")
    status, out = amino_tool(["export", mount.db, point], "amino export")
    if status != 0:
        problems.append(f"amino export {mount.db} exited {status}:\n{out[-3000:]}")
    mount.settled = True
    mount.problems = problems
    return problems


def program(name):
    """Path of one of the C programs built with the tests."""
    if not PROGRAMS:
        raise AssertionError("set AMINO_IT_PROGRAMS to the directory of the built test programs")
    path = os.path.join(PROGRAMS, name)
    if not os.access(path, os.X_OK):
        raise AssertionError(f"test program {path} is missing: build the project first")
    return path


def exit_status(returncode):
    """A shell's view of a wait status: killed by signal N is 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def no_core_dumps():
    # core_pattern may name a file in the working directory; a dump would join the file tree.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def base_env(home):
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
        "HOME": home,
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": "UTC",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
    }


# ---------------------------------------------------------------------------------------------
# Files


def read_pidfile(path, proc=None, timeout=10.0):
    """The pid written to path (a complete line). Fails at once if proc, the process expected
    to write it, ends first."""
    def ready():
        try:
            if mount_of(path):
                data = read_live(path)
                text = data.decode(errors="replace") if data is not None else ""
            else:
                with open(path) as f:
                    text = f.read()
            return int(text) if text.endswith("\n") else None
        except (FileNotFoundError, ValueError):
            return None

    pid = wait_for(lambda: ready() or (proc is not None and proc.poll() is not None), timeout)
    pid = ready()
    if pid is None:
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"{proc.args}: exited {exit_status(proc.returncode)} before "
                                 f"writing {path}; stdout:\n{out.decode(errors='replace')}\n"
                                 f"stderr:\n{err.decode(errors='replace')[-2000:]}")
        raise AssertionError(f"no pid in {path} after {timeout} s")
    return pid


class ScenarioTest(unittest.TestCase):
    """A test whose scenarios compare native runs with runs under `amino run`."""

    maxDiff = None

    def setUp(self):
        if not AMINO or not os.access(AMINO, os.X_OK):
            self.fail("set AMINO to the path of the amino binary")
        self.root = tempfile.mkdtemp(prefix="amino-it-")
        os.chmod(self.root, 0o755)
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.home = os.path.join(self.root, "home")
        os.mkdir(self.home)
        self.children = []
        self.addCleanup(self._check_mounts)  # runs after the leftovers are killed
        self.addCleanup(self._kill_leftovers)

    def _check_mounts(self):
        """Every mount of this test must be consistent: those the test settled reported their
        problems through assertSameOutcome (or here, when it did not compare); the others are
        checked now."""
        failures = []
        for point, mount in list(_MOUNTS.items()):
            if not point.startswith(self.root + "/"):
                continue
            if not mount.settled:
                status, out = amino_tool(["fsck", mount.db], "amino fsck")
                if status != 0:
                    failures.append(f"amino fsck {mount.db} exited {status}:\n{out[-3000:]}")
            elif mount.problems and not mount.reported:
                failures += mount.problems
            del _MOUNTS[point]
        if failures:
            self.fail("Amino mount:\n" + "\n".join(failures))

    def _kill_leftovers(self):
        for proc in self.children:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()

    def amino_modes(self):
        """The selected modes that run amino; tests of amino's own behaviour use these."""
        modes = [m for m in MODES if MODE_FLAGS[m] is not None]
        if not modes:
            self.skipTest("tests amino's own behaviour: no amino mode selected")
        return modes

    def env(self, extra=None):
        env = base_env(self.home)
        env.update(extra or {})
        return env

    def scratch(self, setup=None, fixed_times=True):
        """A fresh scratch directory (all of the same name length), filled by setup(path)."""
        path = tempfile.mkdtemp(prefix="s-", dir=self.root)
        os.chmod(path, 0o755)
        if setup:
            setup(path)
        if fixed_times:
            set_fixed_times(path)
        _SCRATCHES.append(path)
        return path

    def launch(self, mode, argv, cwd, env=None, stdin=subprocess.DEVNULL,
               stdout=subprocess.PIPE, stderr=subprocess.PIPE, new_session=True, amino_args=()):
        """Starts argv in mode (in its own session, without core dumps); returns the Popen.
        amino_args: more options of `amino run`. In a mount mode, the scratch directory that
        holds cwd is the mount."""
        point = next((p for p in reversed(_SCRATCHES) if cwd == p or cwd.startswith(p + "/")),
                     None)
        prefix = amino_prefix(mode, amino_args, point)
        if mode in MOUNT_MODES and point and cwd != point and not os.path.isdir(cwd):
            # The kernel needs a directory to start the command in; under the mount it is the
            # mount's own (the host one is hidden and removed after the run).
            os.makedirs(cwd)
            rel = os.path.relpath(cwd, point).split(os.sep)
            _MOUNTS[point].skeleton += [os.path.join(point, *rel[:i + 1]) for i in range(len(rel))]
        proc = subprocess.Popen(prefix + list(argv), cwd=cwd,
                                env=env if env is not None else self.env(), stdin=stdin,
                                stdout=stdout, stderr=stderr, start_new_session=new_session,
                                preexec_fn=no_core_dumps)
        self.children.append(proc)
        return proc

    def finish(self, proc, timeout, what, input=None):
        if DEADLINE is not None:
            timeout = max(1.0, min(timeout, DEADLINE - time.monotonic()))
        try:
            out, err = proc.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"{what}: still running after {timeout} s; stdout:\n"
                                 f"{out.decode(errors='replace')[-2000:]}\nstderr:\n"
                                 f"{err.decode(errors='replace')[-2000:]}")
        return out, err

    def execute(self, mode, argv, setup=None, env=None, timeout=120, stdin=None, volatile=(),
                cwd=None, after=None, fixed_times=True, during=None):
        """Runs argv in mode in a fresh scratch directory; returns its Outcome. argv items may
        use {scratch}; cwd is relative to the scratch directory. during(mode, scratch, proc) runs
        while the command runs (proc.pid is amino's pid, or the command's natively);
        after(mode, scratch) right after it returned."""
        scratch = self.scratch(setup, fixed_times)
        argv = [a.replace("{scratch}", scratch) for a in argv]
        proc = self.launch(mode, argv, os.path.join(scratch, cwd or ""),
                           env=self.env(env), stdin=subprocess.PIPE if stdin is not None
                           else subprocess.DEVNULL)
        if during:
            try:
                during(mode, scratch, proc)
                if mode in MOUNT_MODES:
                    self.assertDuringKeptToMount(scratch)
            except BaseException:
                self._kill_leftovers()
                raise
        out, err = self.finish(proc, timeout, f"{mode}: {argv}", input=stdin)
        status = exit_status(proc.returncode)
        problems = settle_mount(scratch) if mode in MOUNT_MODES else []
        if after:
            after(mode, scratch)
        norm = scratch.encode()
        return Outcome(status, out.replace(norm, b"$SCRATCH"), err.replace(norm, b"$SCRATCH"),
                       snapshot(scratch, volatile), scratch, tuple(problems))

    def assertDuringKeptToMount(self, scratch):
        """A `during` callback that wrote into the scratch directory on the host, not into the
        mount the command sees, would leave the command waiting for it: fail at once instead."""
        skeleton = set(_MOUNTS[scratch].skeleton)
        written = [n for n in os.listdir(scratch) if os.path.join(scratch, n) not in skeleton]
        if written:
            self.fail(f"the test wrote {written} into {scratch} on the host, under the Amino "
                      f"mount: a `during` callback must use ittest.touch / exists / "
                      f"read_pidfile, which reach into the mount")

    def check(self, argv, setup=None, env=None, timeout=120, stdin=None, volatile=(), cwd=None,
              after=None, fixed_times=True, during=None, expect_status=0):
        """Runs argv natively, then in each selected mode; each run must match the native one.
        Returns the native Outcome. See execute() for the arguments. The native run must exit
        with expect_status (0 unless the scenario says otherwise): a scenario that fails
        natively would otherwise pass by failing the same way under amino."""
        kw = dict(setup=setup, env=env, timeout=timeout, stdin=stdin, volatile=volatile, cwd=cwd,
                  after=after, fixed_times=fixed_times, during=during)
        native = self.execute("native", argv, **kw)
        self.assertEqual(native.status, expect_status,
                         f"the scenario itself is broken: native run exited {native.status}, "
                         f"expected {expect_status}\nstdout: "
                         f"{native.stdout.decode(errors='replace')[-2000:]}\n"
                         f"stderr: {native.stderr.decode(errors='replace')[-2000:]}")
        for mode in MODES:
            with self.subTest(mode=mode):
                got = self.execute(mode, argv, **kw)
                self.assertSameOutcome(native, got, mode, argv)
        return native

    def assertSameOutcome(self, native, got, mode, argv):
        problems = []
        if got.status != native.status:
            problems.append(f"exit status: native {native.status}, {mode} {got.status}")
        for name in ("stdout", "stderr"):
            a, b = getattr(native, name), getattr(got, name)
            if a != b:
                problems.append(f"{name} differs:\n{first_difference(a, b)}")
        tree = diff_trees(native.tree, got.tree)
        if tree:
            problems.append("file tree differs:\n" + "\n".join(tree))
        problems += got.mount_problems
        mount = _MOUNTS.get(got.scratch)
        if mount is not None:
            mount.reported = True
        if problems:
            self.fail(f"{mode}: {' '.join(argv)}\n" + "\n".join(problems))
