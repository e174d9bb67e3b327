"""Runs one command under one configuration and measures it.

The command is started as  [tracer ...] bench_timer TIMES -- CMD ...  in a session of its own.
bench_timer, inside the tracer, measures the workload's elapsed time and the CPU time of its
process tree; os.wait4 on the outermost process gives the CPU time of everything (tracer
included), so the monitor's (or strace's) own CPU time is the difference. `amino run --stats`
also reports the time its loop spent handling stops ("monitor busy").
"""

import dataclasses
import os
import re
import signal
import subprocess
import threading
import time

# The process group of the command running now, killed on interrupt (see cli.py).
CURRENT = {"pgid": None}


@dataclasses.dataclass
class Measurement:
    status: str = "ok"
    value: float = 0.0          # the phase's metric: a rate, or seconds for "time" phases
    ops: int = 0
    seconds: float = 0.0        # the program's own timed interval (RESULT) or inner elapsed
    elapsed: float = 0.0        # wall time of the whole wrapped command, tracer start included
    user: float = 0.0           # workload CPU (bench_timer's children)
    system: float = 0.0
    monitor_user: float = 0.0   # tracer CPU: outer total minus workload
    monitor_system: float = 0.0
    monitor_busy: float = None  # amino --stats: seconds in the monitor's stop handling
    stops: int = None           # amino --stats stops, or strace's system-call count
    monitor_peak_kib: int = None  # amino --stats: the monitor's peak resident memory
    regions_kib: int = None       # amino --stats: the databases' region files, summed
    extra: str = ""
    log: str = ""


# src/monitor/stats.cc: "amino: backend NAME[ (detail)], N stops, X ms in the monitor of Y ms"
STATS_RE = re.compile(r"amino: backend [^\n]*?(\d+) stops, ([\d.]+) ms in the monitor")
PEAK_RE = re.compile(r"^amino: monitor peak resident memory (\d+) KiB$", re.M)
REGIONS_RE = re.compile(r"^amino: .*: database regions (\d+) KiB in \d+ files", re.M)


def wrapper(config, amino, stats_path, fill):
    if config.tracer == "strace":
        return ["strace", "-cf", "-o", stats_path]
    if config.tracer == "amino":
        return [amino, "run", "--stats"] + [o.format(**fill) for o in config.amino_options] + ["--"]
    return []


def prep_wrapper(config, amino, fill):
    """Preparation runs natively on ext3; on an Amino mount it must go through the monitor."""
    if config.fs == "amino":
        return [amino, "run"] + [o.format(**fill) for o in config.amino_options] + ["--"]
    return []


def run_plain(argv, log_prefix, timeout, env=None):
    """Runs an unmeasured command (preparation); returns None or the failure text."""
    with open(log_prefix + ".out", "w") as out, open(log_prefix + ".err", "w") as err:
        rc, _ = _spawn(argv, out, err, timeout, env)
    if rc != 0:
        return "%s exited %s (%s)" % (os.path.basename(argv[0]), rc, _tail(log_prefix + ".err"))
    return None


def measure(config, phase, amino, timer, log_prefix, fill, env=None):
    m = Measurement(log=log_prefix)
    times_path = log_prefix + ".times"
    stats_path = log_prefix + ".strace"
    for p in (times_path, stats_path):
        if os.path.exists(p):
            os.unlink(p)
    argv = wrapper(config, amino, stats_path, fill) + [timer, times_path, "--"] + phase.argv
    full_env = dict(env or os.environ)
    full_env.update(phase.env)
    with open(log_prefix + ".out", "w") as out, open(log_prefix + ".err", "w") as err:
        out.write("# %s\n" % " ".join(argv))
        out.flush()
        start = time.monotonic()
        rc, ru = _spawn(argv, out, err, phase.timeout, full_env)
        m.elapsed = time.monotonic() - start
    inner = _parse_kv(_read(times_path))
    stdout = _read(log_prefix + ".out")
    stderr = _read(log_prefix + ".err")
    if rc != 0 or not inner:
        m.status = "failed: %s" % (
            "timeout after %gs" % phase.timeout if rc == "timeout" else
            "exit status %s: %s" % (rc, _tail(log_prefix + ".err")))
        return m
    m.user, m.system = float(inner["user"]), float(inner["system"])
    inner_elapsed = float(inner["elapsed"])
    m.monitor_user = max(0.0, ru.ru_utime - m.user)
    m.monitor_system = max(0.0, ru.ru_stime - m.system)
    s = STATS_RE.search(stderr)
    if s:
        m.stops = int(s.group(1))
        m.monitor_busy = float(s.group(2)) / 1000.0
        peak = PEAK_RE.search(stderr)
        m.monitor_peak_kib = int(peak.group(1)) if peak else None
        regions = [int(r) for r in REGIONS_RE.findall(stderr)]
        m.regions_kib = sum(regions) if regions else None
    elif config.tracer == "strace":
        m.stops = _strace_calls(_read(stats_path))
    result = re.search(r"^RESULT ops=(\d+) seconds=([\d.]+)(.*)$", stdout, re.M)
    if phase.metric == "time":
        m.seconds = inner_elapsed
        m.value = inner_elapsed
    elif result:
        m.ops, m.seconds = int(result.group(1)), float(result.group(2))
        m.extra = result.group(3).strip()
        m.value = m.ops / m.seconds if m.seconds > 0 else 0.0
    elif phase.parse and phase.parse(stdout):
        m.ops, m.seconds, m.extra = phase.parse(stdout)
        m.value = m.ops / m.seconds if m.seconds > 0 else 0.0
    elif phase.ops:
        m.ops, m.seconds = phase.ops, inner_elapsed
        m.value = m.ops / m.seconds if m.seconds > 0 else 0.0
    else:
        m.status = "failed: no RESULT line in the output"
        return m
    if not m.value > 0:
        m.status = "failed: non-positive result (%s ops in %s s)" % (m.ops, m.seconds)
    return m


def _spawn(argv, out, err, timeout, env):
    try:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    except OSError as e:
        err.write("%s: %s\n" % (argv[0], e))
        return "not started (%s)" % e.strerror, None
    CURRENT["pgid"] = proc.pid
    timed_out = threading.Event()

    def expire():
        timed_out.set()
        kill_group(proc.pid)

    # A daemon started inside the try: a SIGTERM (raised as Interrupted, cli.py) that comes
    # while it starts must not leave a timer the interpreter's exit would wait for until the
    # phase's timeout, as one did in a smoke run.
    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    try:
        timer.start()
        while True:
            try:
                _, status, ru = os.wait4(proc.pid, 0)
                break
            except InterruptedError:
                continue
    except BaseException:
        # Interrupted (SIGINT/SIGTERM): the command must be gone before its file system is
        # unmounted.
        kill_group(proc.pid)
        os.waitpid(proc.pid, 0)
        raise
    finally:
        timer.cancel()
        CURRENT["pgid"] = None
    proc.returncode = os.waitstatus_to_exitcode(status)
    if timed_out.is_set():
        return "timeout", ru
    return proc.returncode, ru


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _parse_kv(text):
    return dict(w.split("=", 1) for w in text.split() if "=" in w)


def _strace_calls(text):
    for line in text.splitlines():
        w = line.split()
        if w and w[-1] == "total":
            # "% time, seconds, usecs/call, calls, [errors], total": calls is the second integer.
            nums = [x for x in w[:-1] if re.fullmatch(r"\d+", x)]
            if len(nums) >= 2:
                return int(nums[1])
    return None


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _tail(path, n=3):
    text = _read(path)
    stats = text.find("amino: backend ")  # the --stats table says nothing about the failure
    if stats >= 0:
        text = text[:stats]
    lines = [l for l in text.splitlines() if l.strip()]
    return " | ".join(lines[-n:])[-400:] or "no output on stderr"
