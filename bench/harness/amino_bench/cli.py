"""bench/run: every configuration on every workload, side by side in one run (DESIGN.md §7)."""

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import time

from . import configs as cfgs
from . import fs
from . import machine
from . import report
from . import runner
from . import sources
from . import workloads as wls

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BUILD = os.path.join(REPO, "build", "default")
MIB = 1 << 20


class Interrupted(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="bench/run",
        description="Amino against ext3, strace and itself: the paper's evaluation reproduced. "
                    "Creates its own ext3 (and ext2) file systems on loop devices, runs each "
                    "workload under each configuration from a cold cache, and writes "
                    "results.csv, summary.csv, report.md and plots/*.png into --out.")
    p.add_argument("--configs", default="all",
                   help="comma-separated configurations (default: all; see --list)")
    p.add_argument("--workloads", default="",
                   help="comma-separated workloads, or 'all' (default: the scale's set)")
    p.add_argument("--scale", choices=wls.SCALES, default="smoke",
                   help="smoke: minutes, for CI; full: every workload at sizes a 2-CPU machine "
                        "runs in about 1.5 hours; paper: the paper's sizes (many hours)")
    p.add_argument("--out", help="output directory (default ./amino-bench-<time>)")
    p.add_argument("--reps", type=int, help="repetitions (default: smoke 1, full 2, paper 3)")
    p.add_argument("--amino", default=os.path.join(BUILD, "amino"), help="the amino binary")
    p.add_argument("--programs", default=os.path.join(BUILD, "bench", "harness"),
                   help="directory of the harness programs (pmgen, meta_bench, ...)")
    p.add_argument("--libamino", help="path of libamino.so (default: found beside amino)")
    p.add_argument("--work", help="directory for the loop devices' backing files (default "
                                  "OUT/work; must be on a disk file system, not tmpfs)")
    p.add_argument("--cache", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "amino-bench"),
        help="where Debian source packages are kept (default ~/.cache/amino-bench)")
    p.add_argument("--fetch", action="store_true",
                   help="only fetch the source packages the chosen workloads need, then exit")
    p.add_argument("--cpus", help="run every workload and tracer on these CPUs only "
                                  "(e.g. 0 or 0-1; default: all); recorded in the report")
    p.add_argument("--list", action="store_true",
                   help="list configurations (with availability here) and workloads, then exit")
    a = p.parse_args(argv)
    a.reps = a.reps or {"smoke": 1, "full": 2, "paper": 3}[a.scale]
    if a.cpus:
        try:
            a.cpus = _cpu_list(a.cpus)
        except ValueError:
            p.error("--cpus: expected a list such as 0 or 0,2-3, got %r" % a.cpus)
        allowed = os.sched_getaffinity(0)
        if not set(a.cpus) <= allowed:
            p.error("--cpus: CPU(s) %s not available to this process, which may use only %s "
                    "(taskset or a cgroup confines it)" % (
                        ",".join(str(c) for c in a.cpus if c not in allowed),
                        ",".join(str(c) for c in sorted(allowed))))
    return a


def _cpu_list(text):
    """The CPUs of a list such as 0,2-3."""
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if first > last:
            raise ValueError(part)
        cpus.update(range(first, last + 1))
    if not cpus:
        raise ValueError(text)
    return sorted(cpus)


def say(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class Ctx:
    """What a workload needs to build its commands for one run."""

    def __init__(self, args, run_dir, wdir, config, features, srcs):
        self.args, self.run_dir, self.dir = args, run_dir, wdir
        self.durable, self.txn = config.durable, config.txn
        self.libamino_dir = features.libamino_dir
        self.sources = {k: v[0] for k, v in srcs.items()}
        self.source_tops = {k: v[1] for k, v in srcs.items()}

    def prog(self, name):
        return os.path.join(self.args.programs, name)

    def host_file(self, name, text):
        path = os.path.join(self.run_dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.cpus:
        # Every workload, tracer and monitor inherits this: with one CPU, a traced call's stop
        # and the monitor's answer never wait for a wake-up on another CPU.
        os.sched_setaffinity(0, args.cpus)
    try:
        configs = cfgs.select(args.configs)
        workloads = wls.select(args.workloads, args.scale)
    except ValueError as e:
        say("bench/run: %s" % e)
        return 2
    features = cfgs.probe(args.amino, args.libamino)
    avail = {c.name: cfgs.skip_reason(c, features) for c in configs}
    if args.list:
        for c in cfgs.CONFIGS:
            why = cfgs.skip_reason(c, features)
            print("%-18s %s%s" % (c.name, c.summary, "  [%s]" % why if why else ""))
        print()
        for n in wls.ORDER:
            w = wls.make(n, args.scale)
            print("%-15s %s" % (n, w.describe))
        return 0

    if os.geteuid() != 0:
        say("bench/run: must run as root: it creates loop devices, file systems and mounts, "
            "and drops the page cache (try: sudo bench/run ...)")
        return 1 if os.environ.get("CI") else 2

    srcs, src_problem = {}, {}
    for w in workloads:
        if isinstance(w, wls.Build):
            pkg = w.p("package")
            try:
                srcs[pkg] = sources.ensure(pkg, args.cache, log=say)
            except (sources.SourceError, OSError) as e:
                src_problem[w.name] = "source package %s: %s" % (pkg, e)
    if args.fetch:
        for k, v in srcs.items():
            say("%s: %s" % (k, v[0]))
        return 1 if src_problem else 0

    missing_tools = [t for t in ("losetup", "mount", "umount", "mkfs.ext3", "mkfs.ext2")
                     if not shutil.which(t)]
    missing_progs = [p for p in ("bench_timer", "pmgen", "meta_bench", "data_bench", "mail_gen")
                     if not os.access(os.path.join(args.programs, p), os.X_OK)]
    if missing_tools or missing_progs:
        say("bench/run: missing %s" % ", ".join(
            missing_tools + [os.path.join(args.programs, p) for p in missing_progs]))
        say("  (scripts/install-deps installs the tools; the programs are built with the "
            "project: cmake --build --preset default)")
        return 1
    w_unavail = dict(src_problem)
    for w in workloads:
        lacking = [t for t in w.needs() if not shutil.which(t)]
        if lacking:
            w_unavail[w.name] = "%s not installed (scripts/install-deps)" % ", ".join(lacking)

    started = datetime.datetime.now()
    out = os.path.abspath(args.out or "amino-bench-" + started.strftime("%Y%m%d-%H%M%S"))
    work = os.path.abspath(args.work or os.path.join(out, "work"))
    logs = os.path.join(out, "logs")
    for d in (out, work, logs):
        os.makedirs(d, exist_ok=True)
    results = report.Results(out)
    machine_facts = machine.describe(work)

    say("bench/run: %s scale, %d repetition(s), output in %s" % (args.scale, args.reps, out))
    for c in configs:
        if avail[c.name]:
            say("  %-18s %s" % (c.name, avail[c.name]))
    for w, why in w_unavail.items():
        say("  %-18s unavailable: %s" % (w, why))

    plan = []  # (rep, workload, config)
    for rep in range(1, args.reps + 1):
        for w in workloads:
            for c in configs:
                runs = not avail[c.name] and w.name not in w_unavail
                if runs and _txn_status(w, c, features) is None:
                    plan.append((rep, w, c))
    total_phases = sum(len(_phase_names(w)) for _, w, _ in plan)

    res = fs.Resources()
    state = {"done": 0, "total": total_phases, "interrupted": None, "backings": set()}

    def on_signal(signum, _frame):
        state["interrupted"] = signal.Signals(signum).name
        raise Interrupted()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    t0 = time.monotonic()
    loop_info = {}
    try:
        # Rows for what will not run, so that nothing is silently dropped.
        for w in workloads:
            for c in configs:
                why = (("unavailable: " + w_unavail[w.name]) if w.name in w_unavail else
                       avail[c.name] if avail[c.name] else
                       _txn_status(w, c, features))
                if why:
                    for ph in _phase_names(w):
                        results.add(dict(workload=w.name, phase=ph, config=c.name, status=why))
        for rep, w, c in plan:
            run_one(args, res, state, results, features, srcs, w, c, rep, work, logs, loop_info)
    except Interrupted:
        say("\nbench/run: %s: stopping, cleaning up" % state["interrupted"])
    finally:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        if runner.CURRENT["pgid"]:
            runner.kill_group(runner.CURRENT["pgid"])
        problems = res.cleanup()
        leftovers = _leftovers(work, state["backings"])
        for s, h in old.items():
            signal.signal(s, h)
    for p in problems + leftovers:
        say("bench/run: cleanup: %s" % p)
    if not args.work and not leftovers:
        shutil.rmtree(work, ignore_errors=True)

    duration = time.monotonic() - t0
    if loop_info:
        machine_facts = [(k, v) if k != "Loop devices" else (k, "direct I/O %s" % (
            "on (no second cache for the backing file)" if loop_info.get("direct_io") else "off"))
            for k, v in machine_facts]
    summary = report.summarize(results.rows, workloads, configs)
    paper = report.load_paper(os.path.join(REPO, "bench", "paper.csv"))
    report.write_summary_csv(os.path.join(out, "summary.csv"), summary, paper)
    from . import plots  # matplotlib is needed only here
    made = plots.draw_all(out, summary)
    meta = {"command": "bench/run " + " ".join(sys.argv[1:] if argv is None else argv),
            "started": started.strftime("%Y-%m-%d %H:%M"), "scale": args.scale,
            "reps": args.reps, "duration": "%.0f s" % duration,
            "notes": notes(args, workloads, srcs)}
    if state["interrupted"]:
        meta["duration"] += " (interrupted by %s: partial results)" % state["interrupted"]
    text = report.markdown(meta, machine_facts, configs, avail, workloads, summary, paper, made)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(text)
    say("bench/run: %d phase runs in %.0f s; report: %s" % (
        state["done"], duration, os.path.join(out, "report.md")))
    if state["interrupted"]:
        return 130
    return 1 if problems or leftovers else 0


def _phase_names(w):
    return list(w.phase_names)


def _txn_status(w, c, features):
    """For configurations whose workload must use transactions: None, or why it cannot."""
    if not c.txn:
        return None
    if w.txn_variant is None:
        return "n/a: %s has no transactional variant" % w.name
    why = w.txn_unavailable(features)
    return "unavailable: %s" % why if why else None


def run_one(args, res, state, results, features, srcs, w, c, rep, work, logs, loop_info):
    """One repetition of one workload under one configuration, on fresh file systems."""
    tag = "%s.%s.r%d" % (w.name, c.name, rep)
    run_dir = os.path.join(logs, tag)
    os.makedirs(run_dir, exist_ok=True)
    size = w.fs_size[args.scale]
    made = []
    fill = {}
    try:
        if c.fs == "amino":
            # The database needs room beyond the files: its region files (~70 MiB), log files
            # of 16 MiB until a checkpoint removes them, and 64 KiB data pages.
            dbfs = fs.LoopFs(res, os.path.join(work, "db.img"), os.path.join(work, "dbfs"),
                             "ext2", 2 * size + 256 * MIB)
            state["backings"].add(dbfs.backing)
            made.append(dbfs)
            dbfs.create()
            dbfs.mount()
            fill = {"mountpoint": os.path.join(work, "amino"), "db": os.path.join(
                work, "dbfs", "db")}
            os.makedirs(fill["mountpoint"], exist_ok=True)
            wdir = os.path.join(fill["mountpoint"], "w")
            fail = runner.run_plain([args.amino, "mkfs", fill["db"]], os.path.join(
                run_dir, "mkfs"), 600)
            target = dbfs
        else:
            ext3 = fs.LoopFs(res, os.path.join(work, "ext3.img"), os.path.join(work, "mnt"),
                             "ext3", size, w.mkfs_args)
            state["backings"].add(ext3.backing)
            made.append(ext3)
            ext3.create()
            ext3.mount(w.mount_options)
            loop_info.update(ext3.device_info())
            wdir = os.path.join(ext3.mountpoint, "w")
            fail = None
            target = ext3
        ctx = Ctx(args, run_dir, wdir, c, features, srcs)
        pre = runner.prep_wrapper(c, args.amino, fill)
        if not fail:
            fail = runner.run_plain(pre + ["mkdir", "-p", wdir], os.path.join(run_dir, "mkdir"),
                                    600)
        for i, argv in enumerate(w.prepare(ctx)):
            if fail:
                break
            fail = runner.run_plain(pre + argv, os.path.join(run_dir, "prepare%d" % i), 7200)
        options = ",".join(o for o in (w.mount_options, c.mount_options) if o)
        failed_before = "preparation failed: %s" % fail if fail else None
        for ph in w.phases(ctx):
            row = dict(workload=w.name, phase=ph.name, config=c.name, rep=rep, metric=ph.metric,
                       unit=ph.unit)
            if failed_before:
                row["status"] = "failed: " + failed_before
                results.add(row)
                state["done"] += 1
                continue
            entry = target.cold(options if c.fs == "ext3" else None)
            row["fs"] = "%s %s" % (entry[2], entry[3])
            if sys.stderr.isatty():  # a line that the result line overwrites
                sys.stderr.write("[%3d/%d] rep %d  %-18s %-15s %-12s running...\r" % (
                    state["done"] + 1, state["total"], rep, c.name, w.name, ph.name))
                sys.stderr.flush()
            m = runner.measure(c, ph, args.amino, os.path.join(args.programs, "bench_timer"),
                               os.path.join(run_dir, ph.name), fill)
            row.update(status=m.status, value=m.value, ops=m.ops, seconds=m.seconds,
                       elapsed=m.elapsed, user=m.user, system=m.system,
                       monitor_user=m.monitor_user, monitor_system=m.monitor_system,
                       monitor_busy=m.monitor_busy, stops=m.stops,
                       monitor_peak_kib=m.monitor_peak_kib, regions_kib=m.regions_kib,
                       extra=m.extra)
            results.add(row)
            state["done"] += 1
            shown = ("%s %s" % (report._fmt(m.value), ph.unit) if m.status == "ok"
                     else m.status)
            say("[%3d/%d] rep %d  %-18s %-15s %-12s %-22s (%.1f s)" % (
                state["done"], state["total"], rep, c.name, w.name, ph.name, shown, m.elapsed))
            if m.status != "ok":
                failed_before = "phase %s failed" % ph.name
    except fs.FsError as e:
        say("[%3d/%d] rep %d  %-18s %-15s file system: %s" % (
            state["done"], state["total"], rep, c.name, w.name, e))
        for ph in _phase_names(w):
            results.add(dict(workload=w.name, phase=ph, config=c.name, rep=rep,
                             status="failed: file system: %s" % e))
    finally:
        for f in reversed(made):
            try:
                f.destroy()
            except fs.FsError as e:
                say("bench/run: %s" % e)


def _leftovers(work, backings):
    """Mounts under the work directory or loop devices on our backing files still present."""
    found = []
    work = os.path.realpath(work)
    for dev, mp, typ, _ in fs.proc_mounts():
        if mp == work or mp.startswith(work + "/"):
            found.append("still mounted: %s on %s (%s)" % (dev, mp, typ))
    for b in backings:
        r = subprocess.run(["losetup", "-j", b], capture_output=True, text=True)
        if r.stdout.strip():
            found.append("still attached: %s" % r.stdout.strip())
    return found


def notes(args, workloads, srcs):
    n = [
        "Each workload runs on a file system made for it (mkfs.ext3 on a loop device whose "
        "backing file lives in the output's work directory), for every repetition. Every phase "
        "starts from a cold cache: unmount (which writes back and forgets what the file "
        "system cached), `echo 3 > /proc/sys/vm/drop_caches`, mount "
        "(with `-o sync` for VANSYNC); /proc/mounts is checked to show ext3 after each mount "
        "(the fs column of results.csv).",
        "Loop devices use direct I/O when the kernel allows it, so the backing file is not "
        "cached a second time in the host's page cache; the loop device then behaves like a "
        "disk whose own cache is the host disk's (see Write cache above).",
        "CPU: bench_timer runs inside the tracer and reports the CPU time of the workload's "
        "process tree; wait4 on the outermost process gives the CPU time of everything; the "
        "difference is the tracer's own (strace's or the Amino monitor's).",
        "Repetitions are interleaved (every configuration once, then again) so that a change "
        "in the machine's load spreads over all configurations.",
        "Durable configurations run smaller sizes where the workload has a fixed amount of "
        "work (as the paper did): postmark transactions and the meta-data directories.",
    ]
    if args.scale == "full":
        n.append(
            "Scale `full`: every workload and configuration, two repetitions, at sizes that "
            "fit about 1.5 hours on a 2-CPU machine; `--scale paper` runs the paper's own "
            "sizes (many hours). Where they differ: postmark 10,000 transactions (paper "
            "100,000), meta-data 500 directories of 200 files (paper 5,000; durable 50 and "
            "500), time-limited phases of 10 s (pmgen), 6 s (data) and 15 s after 3 s (mail) "
            "instead of 60 s, a 1 GiB data file, and zlib instead of OpenSSH for the build.")
    if args.cpus:
        n.append(
            "Placement: the run was confined to CPU(s) %s with --cpus, so a traced call's "
            "stop and the monitor's answer share a CPU (no cross-CPU wake-up) and other work "
            "on the remaining CPUs does not compete; native configurations are confined the "
            "same way, so every ratio compares like with like." % ",".join(map(str, args.cpus)))
    for w in workloads:
        if isinstance(w, wls.Data):
            n.append(
                "Data micro-benchmarks: the paper used a file twice the RAM (8 GB on 4 GB) so "
                "that the cache could not serve the workload. This machine has %.0f GiB of RAM; "
                "a 2x file would take tens of minutes per phase and configuration to create and "
                "cycle. Instead the file is %s and the cache is neutralised rather than "
                "outgrown: each phase starts with a remount and drop_caches, touches each 4 KiB "
                "block at most once (in order, or in a shuffled permutation as in the paper), "
                "so every read comes from the device, and write phases overwrite in place and "
                "end with fsync inside the timed interval, so every written block reaches the "
                "device. Each phase stops after %g s or at the end of the file." % (
                    _ram_gib(), wls._size(w.p("size")), w.p("seconds")))
        if isinstance(w, wls.Build):
            pkg = w.p("package")
            src = srcs.get(pkg)
            n.append(
                "Build: the upstream tarball of Debian's source package `%s` (%s), fetched by "
                "`apt-get source --download-only` with a private apt configuration and cached "
                "in %s; phases: tar -xf, ./configure, make -j%d%s. The paper scale builds "
                "OpenSSH as the paper did (4.2p1 there, Debian 12's 9.2p1 here); the full scale "
                "builds all of zlib (about 250 files unpacked, configure, the static and shared "
                "libraries and test programs), which keeps a two-repetition run of every "
                "configuration within about 1.5 hours on two CPUs; the smoke scale configures "
                "zlib and compiles six of its objects, so that CI stays within minutes." % (
                    pkg, os.path.basename(src[0]) if src else "not fetched", args.cache,
                    wls.cpus(), " " + " ".join(w.p("target")) if w.p("target") else ""))
        if isinstance(w, wls.Mail):
            n.append(
                "Mail: the packaged local delivery agent is Debian's procmail (its default "
                "mailbox delivery, as for `procmail -d USER`: a dot-lock file, an fcntl lock on "
                "the mailbox, the append, and fsync before it reports success), started once per "
                "message like Sendmail's mail.local in the paper. procmail retries a held "
                "dot-lock after LOCKSLEEP seconds (default 8); it is set to 1, its smallest "
                "value. Mailboxes start with one message each and an old access time, as in a "
                "mail spool (procmail sleeps a second before delivering into a mailbox whose "
                "access time is not in the past). Senders run closed-loop (as fast as "
                "deliveries complete) rather than at requested rates, so the result is the "
                "highest sustained rate; the paper's Figure 5 gives achieved rates at requested "
                "5-20 msg/s, and its 20 msg/s column is shown beside ours. Sendmail's mail.local "
                "itself would need the sendmail MTA installed and real user accounts.")
        if isinstance(w, wls.Postmark) and not any("Packaged postmark" in x for x in n):
            n.append(
                "Packaged postmark counts time in whole seconds; its rate here is its "
                "transactions divided by the elapsed time of the whole run (pool creation and "
                "deletion included). pmgen reports the transaction phase alone, as the paper's "
                "modified Postmark did.")
    return n


def _ram_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    return 0
