"""A description of the machine, captured into every report: results mean little without it."""

import os
import platform
import subprocess


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _cmd(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return r.stdout.strip() if r.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def block_device_of(path):
    """(device name, whole-disk name) holding `path`, from its st_dev and /sys/dev/block."""
    st = os.stat(path)
    sys_path = os.path.realpath("/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)))
    if not os.path.exists(sys_path):
        return "", ""
    name = os.path.basename(sys_path)
    parent = os.path.basename(os.path.dirname(sys_path))
    disk = parent if os.path.exists("/sys/block/%s" % parent) else name
    return name, disk


def describe(work_dir, loop_info=None):
    """Ordered list of (what, value)."""
    cpu = ""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    part, disk = block_device_of(work_dir)
    q = "/sys/block/%s/queue/" % disk
    rotational = _read(q + "rotational")
    facts = [
        ("CPU", "%s, %d cores" % (cpu or platform.processor(), os.cpu_count() or 0)),
        ("CPUs used", _cpus_used()),
        ("RAM", "%.1f GiB" % (mem_kib / 1024 / 1024)),
        ("Kernel", "%s %s" % (platform.system(), platform.release())),
        ("OS", _os_name()),
        ("Backing files on", "%s (disk %s, %s, %s)" % (
            part or "?", disk or "?", _read("/sys/block/%s/device/model" % disk) or
            ("vendor " + _read("/sys/block/%s/device/vendor" % disk)) if _read(
                "/sys/block/%s/device/vendor" % disk) else "model unknown",
            {"0": "non-rotational", "1": "rotational"}.get(rotational, "rotation unknown"))),
        ("Write cache", _read(q + "write_cache") or "unknown"),
        ("I/O scheduler", _read(q + "scheduler") or "unknown"),
        ("Loop devices", "direct I/O %s" % (
            "on (no second cache for the backing file)" if loop_info and loop_info.get(
                "direct_io") else "off" if loop_info else "not yet attached")),
        ("Load average at start", _read("/proc/loadavg")),
        ("Tools", "; ".join(x for x in (
            _first_line(["strace", "-V"]), _first_line(["postmark", "-V"], "postmark 1.53"),
            _first_line(["procmail", "-v"], "procmail"), _first_line(["mkfs.ext3", "-V"]),
            _first_line(["gcc", "--version"])) if x)),
    ]
    return facts


def _cpus_used():
    mine, total = sorted(os.sched_getaffinity(0)), os.cpu_count() or 0
    if len(mine) == total:
        return "all %d" % total
    return "%s of %d (bench/run --cpus): every workload, tracer and monitor ran there" % (
        ",".join(map(str, mine)), total)


def _first_line(argv, fallback=""):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10,
                           stdin=subprocess.DEVNULL)
        text = (r.stdout + r.stderr).strip().splitlines()
        return text[0].strip() if text else fallback
    except (OSError, subprocess.TimeoutExpired):
        return fallback


def _os_name():
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return ""
