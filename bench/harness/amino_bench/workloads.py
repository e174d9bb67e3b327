"""The workloads (the paper's §4 plus its Postmark variants) at three scales: smoke (toy sizes,
minutes, for CI), full (every workload at sizes a 2-CPU machine runs in about 1.5 hours for two
repetitions of every configuration) and paper (the paper's own sizes: many hours).

A workload is a preparation (commands run before measuring, not timed) and a list of phases.
Each phase is one command, started from a cold cache (the file system is unmounted, caches are
dropped, and it is mounted again, as the paper remounted between iterations), and measured
alone: its rate comes from the "RESULT ops=N seconds=S" line of the harness's own programs, or
its elapsed time for commands that are not ours (tar, configure, make: lower is better).
Commands name files through ctx: ctx.dir is the workload's directory on the file system under
test, ctx.prog(name) a harness program, ctx.durable whether the configuration is durable (the
paper ran smaller sizes there), ctx.txn whether it wants libamino transactions.
"""

import dataclasses
import os
import re

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


@dataclasses.dataclass
class Phase:
    name: str
    argv: list
    metric: str = "rate"   # "rate": ops/seconds from RESULT (higher is better); "time": elapsed
    unit: str = "ops/s"
    timeout: float = 600.0
    env: dict = dataclasses.field(default_factory=dict)
    ops: int = 0           # for "rate" phases of programs without a RESULT line: ops/elapsed
    # For "rate" phases of programs that report in their own words: stdout -> (ops, seconds,
    # extra) or None when the output says nothing usable.
    parse: object = None


class Workload:
    name = ""
    family = ""        # the workload's name in bench/paper.csv
    describe = ""
    fs_size = {"smoke": 128 * MIB, "full": 4 * GIB, "paper": 4 * GIB}
    mkfs_args = ()
    mount_options = ""  # added to the configuration's own options
    txn_variant = None  # None: no transactional variant (TXN configurations are n/a)
    phase_names = ()    # what phases() returns, by name (known before a run starts)

    def __init__(self, scale):
        self.scale = scale

    def p(self, key):
        """A parameter at this scale."""
        return self.params[self.scale][key]

    def prepare(self, ctx):
        return []

    def phases(self, ctx):
        raise NotImplementedError

    def txn_unavailable(self, features):
        """Why the transactional variant cannot run (None when it can)."""
        return None

    def needs(self):
        """Programs (besides the harness's own) this workload runs."""
        return []


class Postmark(Workload):
    """The packaged postmark (Debian's postmark 1.53), a fixed number of transactions."""
    phase_names = ("transactions",)
    family = "postmark"
    variants = {
        "postmark": dict(size=(512, 10 * KIB), subdirs=0, files_mult=1),
        "postmark-large": dict(size=(5 * KIB, 100 * KIB), subdirs=0, files_mult=1),
        "postmark-many": dict(size=(512, 10 * KIB), subdirs=250, files_mult=10),
    }
    params = {"smoke": dict(files=100, transactions=400, durable_transactions=40),
              "full": dict(files=2500, transactions=10000, durable_transactions=500),
              "paper": dict(files=2500, transactions=100000, durable_transactions=500)}

    def __init__(self, scale, variant):
        super().__init__(scale)
        self.name = variant
        self.family = variant
        self.v = self.variants[variant]
        self.describe = ("packaged postmark: %d files of %s, %d subdirectories, read/write "
                         "4 KiB, unbuffered" % (
                             self.p("files") * self.v["files_mult"], _size_range(self.v["size"]),
                             self.v["subdirs"] if scale != "smoke" else min(self.v["subdirs"], 5)))

    def needs(self):
        return ["postmark"]

    def phases(self, ctx):
        files = self.p("files") * self.v["files_mult"]
        subdirs = self.v["subdirs"] if self.scale != "smoke" else min(self.v["subdirs"], 5)
        tx = self.p("durable_transactions" if ctx.durable else "transactions")
        lo, hi = self.v["size"]
        cfg = ctx.host_file("postmark.cfg", "\n".join([
            "set location %s" % ctx.dir, "set number %d" % files, "set transactions %d" % tx,
            "set size %d %d" % (lo, hi), "set read 4096", "set write 4096",
            "set buffering false", "set subdirectories %d" % subdirs, "set seed 42",
            "set report terse", "run", "quit", ""]))
        # postmark times itself in whole seconds; the harness divides the transactions by the
        # precise elapsed time of the whole run instead (pool creation and deletion included).
        return [Phase("transactions", ["postmark", cfg], unit="tps", ops=tx,
                      timeout=7200)]


class Pmgen(Workload):
    """The Postmark-compatible generator (bench/harness/programs/pmgen.cc): time limited, and
    with --txn one Amino transaction per Postmark transaction."""
    phase_names = ("transactions",)
    variants = {"pmgen": ("postmark", (512, 10 * KIB), 0, 1),
                "pmgen-large": ("postmark-large", (5 * KIB, 100 * KIB), 0, 1),
                "pmgen-many": ("postmark-many", (512, 10 * KIB), 250, 10)}
    params = {"smoke": dict(files=100, seconds=0.5), "full": dict(files=2500, seconds=10.0),
              "paper": dict(files=2500, seconds=60.0)}
    txn_variant = "pmgen --txn"

    def __init__(self, scale, variant):
        super().__init__(scale)
        self.name = variant
        self.family, self.size, subdirs, self.mult = self.variants[variant]
        self.subdirs = subdirs if scale != "smoke" else min(subdirs, 5)
        self.describe = ("Postmark-compatible generator: %d files of %s, %d subdirectories, "
                         "transactions for %g s" % (self.p("files") * self.mult,
                                                    _size_range(self.size), self.subdirs,
                                                    self.p("seconds")))

    def phases(self, ctx):
        argv = [ctx.prog("pmgen"), "--dir", ctx.dir, "--files", str(self.p("files") * self.mult),
                "--size-low", str(self.size[0]), "--size-high", str(self.size[1]),
                "--subdirs", str(self.subdirs), "--time", str(self.p("seconds")),
                "--block", "4096", "--seed", "42"]
        env = {}
        if ctx.txn:
            argv.append("--txn")
            env["LD_LIBRARY_PATH"] = ctx.libamino_dir
        return [Phase("transactions", argv, unit="tps", env=env,
                      timeout=self.p("seconds") * 20 + 600)]

    def txn_unavailable(self, features):
        return None if "libamino" in features.have else features.why.get("libamino")


class Meta(Workload):
    """create, stat, readdir, unlink over D directories of F files (paper §4.4: 5,000 x 200;
    durable configurations 500 x 200)."""
    phase_names = ("create", "stat", "readdir", "unlink")
    name = family = "meta"
    params = {"smoke": dict(dirs=10, files=100, durable_dirs=2),
              "full": dict(dirs=500, files=200, durable_dirs=50),
              "paper": dict(dirs=5000, files=200, durable_dirs=500)}
    fs_size = {"smoke": 128 * MIB, "full": 2 * GIB, "paper": 8 * GIB}
    mount_options = "noatime"  # as the paper: the operation alone, no atime updates

    def __init__(self, scale):
        super().__init__(scale)
        self.describe = ("create, stat, readdir, unlink: %d directories x %d files (durable "
                         "configurations: %d directories), noatime" % (
                             self.p("dirs"), self.p("files"), self.p("durable_dirs")))
        n = self.p("dirs") * (self.p("files") + 1)
        self.mkfs_args = ("-N", str(max(65536, int(n * 1.2))))

    def phases(self, ctx):
        dirs = self.p("durable_dirs" if ctx.durable else "dirs")
        base = [ctx.prog("meta_bench"), "--dir", ctx.dir, "--dirs", str(dirs), "--files",
                str(self.p("files"))]
        return [Phase(ph, base + ["--phase", ph], timeout=7200)
                for ph in ("create", "stat", "readdir", "unlink")]


class Data(Workload):
    """Sequential and random 4 KiB reads and writes on one file (paper §4.5)."""
    phase_names = ("seqread", "randread", "seqwrite", "randwrite")
    name = family = "data"
    params = {"smoke": dict(size=32 * MIB, seconds=0.5), "full": dict(size=GIB, seconds=6.0),
              "paper": dict(size=4 * GIB, seconds=60.0)}
    fs_size = {"smoke": 128 * MIB, "full": 2 * GIB, "paper": 6 * GIB}

    def __init__(self, scale):
        super().__init__(scale)
        self.describe = ("4 KiB blocks on a %s file, each phase from a cold cache, at most "
                         "%g s, each block at most once, writes fsync'd inside the timing" % (
                             _size(self.p("size")), self.p("seconds")))

    def _base(self, ctx):
        return [ctx.prog("data_bench"), "--file", os.path.join(ctx.dir, "data"), "--size",
                str(self.p("size"))]

    def prepare(self, ctx):
        return [self._base(ctx) + ["--phase", "fill"]]

    def phases(self, ctx):
        return [Phase(ph, self._base(ctx) + ["--phase", ph, "--time", str(self.p("seconds"))],
                      timeout=self.p("seconds") * 20 + 1800)
                for ph in ("seqread", "randread", "seqwrite", "randwrite")]


class Build(Workload):
    """Unpack, configure and compile a real C source tree from Debian (paper §4.2: OpenSSH)."""
    phase_names = ("unpack", "configure", "build")
    name = family = "build"
    # Debian source package, configure arguments, make targets; the smoke scale builds six
    # objects of zlib (seconds), the full scale all of zlib, the paper scale all of OpenSSH as
    # the paper did (tens of minutes per configuration on two CPUs).
    params = {"smoke": dict(package="zlib", configure=[], target=[
                  "compress.o", "uncompr.o", "gzclose.o", "gzlib.o", "gzread.o", "gzwrite.o"]),
              "full": dict(package="zlib", configure=[], target=[]),
              "paper": dict(package="openssh", configure=[], target=[])}
    txn_variant = "transactional make and tar"

    def __init__(self, scale):
        super().__init__(scale)
        self.describe = ("Debian source package %s: unpack (tar), configure, make -j%d%s" % (
            self.p("package"), cpus(),
            " " + " ".join(self.p("target")) if self.p("target") else ""))

    def needs(self):
        return ["tar", "make", "cc"]

    def prepare(self, ctx):
        tarball = ctx.sources[self.p("package")]
        return [["cp", tarball, os.path.join(ctx.dir, "source.tar")]]

    def phases(self, ctx):
        top = os.path.join(ctx.dir, ctx.source_tops[self.p("package")])
        conf = " ".join(["./configure"] + self.p("configure"))
        make = " ".join(["make", "-j%d" % cpus()] + self.p("target"))
        return [
            Phase("unpack", ["tar", "-xf", os.path.join(ctx.dir, "source.tar"), "-C", ctx.dir],
                  metric="time", unit="s", timeout=3600),
            Phase("configure", ["sh", "-c", 'cd "$1" && exec %s' % conf, "sh", top],
                  metric="time", unit="s", timeout=7200),
            Phase("build", ["sh", "-c", 'cd "$1" && exec %s' % make, "sh", top],
                  metric="time", unit="s", timeout=14400),
        ]

    def txn_unavailable(self, features):
        return "needs transactional make and tar (not in the tree yet)"


def _maildeliver(libamino_dir):
    """examples/maildeliver in the build tree that holds libamino (build/<preset>/src/libamino)."""
    return os.path.normpath(os.path.join(libamino_dir, "..", "..", "examples", "maildeliver"))


class Mail(Workload):
    """Concurrent delivery into 100 mailboxes by the packaged local delivery agent (procmail,
    with its dot-lock, kernel lock and fsync), or by the transactional agent of examples/."""
    phase_names = ("deliver",)
    name = family = "mail"
    params = {"smoke": dict(senders=4, seconds=1.0, warmup=0.0, mailboxes=100),
              "full": dict(senders=32, seconds=15.0, warmup=3.0, mailboxes=100),
              "paper": dict(senders=32, seconds=60.0, warmup=10.0, mailboxes=100)}
    txn_variant = "transactional delivery agent (examples/)"

    def __init__(self, scale):
        super().__init__(scale)
        self.describe = ("%d concurrent senders, %d mailboxes, sizes ~ N(5,993 B, 4,166 B), "
                         "%g s after %g s warm-up; agent: procmail (dot-lock + fcntl lock + "
                         "fsync); a delivery the agent defers (EX_TEMPFAIL) is handed over "
                         "again, as a mail system would" % (self.p("senders"), self.p("mailboxes"), self.p("seconds"),
                                     self.p("warmup")))

    def needs(self):
        return ["procmail"]

    def prepare(self, ctx):
        # Mailboxes as a mail spool has them: each holds a message and was last read long ago.
        # procmail sleeps a second before delivering into a mailbox whose access time is not
        # older than the moment of delivery (so that new-mail checks see atime < mtime), which
        # a mailbox created a moment before would trigger.
        seed = "From seed@bench.invalid  Sat Jan  1 00:00:00 2000\nSubject: seed\n\nseed\n\n"
        script = ('mkdir -p "$1" && i=0; while [ $i -lt %d ]; do printf "%%s" "$2" > '
                  '"$1/user$i" && touch -d @946684800 "$1/user$i" || exit 1; i=$((i+1)); done'
                  % self.p("mailboxes"))
        return [["sh", "-c", script, "sh", os.path.join(ctx.dir, "mail"), seed]]

    def phases(self, ctx):
        # procmail's default delivery (as for `procmail -d USER`): dot-lock, fcntl lock, append,
        # fsync. A held dot-lock is retried after LOCKSLEEP seconds (8 by default), which would
        # make the result a measure of sleeping; 1 is the smallest whole second it takes.
        agent = ["procmail", "-f", "sender@bench.invalid", "-m", "LOCKSLEEP=1",
                 "DEFAULT={mbox}", "/dev/null"]
        env = {}
        if ctx.txn:
            env["LD_LIBRARY_PATH"] = ctx.libamino_dir
            # The transactional agent: one Amino transaction per message, fsync after commit.
            agent = [_maildeliver(ctx.libamino_dir), "-f", "sender@bench.invalid", "{mbox}"]
        argv = [ctx.prog("mail_gen"), "--dir", os.path.join(ctx.dir, "mail"), "--mailboxes",
                str(self.p("mailboxes")), "--senders", str(self.p("senders")), "--time",
                str(self.p("seconds")), "--warmup", str(self.p("warmup")), "--seed", "42",
                "--"] + agent
        return [Phase("deliver", argv, unit="msg/s", env=env,
                      timeout=(self.p("seconds") + self.p("warmup")) * 20 + 600)]

    def txn_unavailable(self, features):
        if not features.libamino_dir:
            return features.why.get("libamino")
        path = _maildeliver(features.libamino_dir)
        return None if os.access(path, os.X_OK) else "no %s (build examples/)" % path


class Tools(Workload):
    """Everyday programs over a real source tree (a copy of the machine's /usr/include): copy it
    in, list it, size it, compare it, checksum it, archive and unpack it, and keep it in git."""
    phase_names = ("cp-a", "find", "du", "diff-r", "md5sum", "tar-c", "tar-x", "git-commit",
                   "git-status", "git-log-stat")
    name = family = "tools"
    # The tree each scale copies: a directory of C headers Debian's libc6-dev and the kernel's
    # linux-libc-dev install (build-essential brings both).
    params = {"smoke": dict(tree="/usr/include/linux"),
              "full": dict(tree="/usr/include"),
              "paper": dict(tree="/usr/include")}

    def __init__(self, scale):
        super().__init__(scale)
        self.describe = ("a copy of %s: cp -a, find | wc -l, du -s, diff -r against the "
                         "original, md5sum of every file, tar c, tar x, git add + commit, git "
                         "status, git log --stat; each phase from a cold cache" % self.p("tree"))

    def needs(self):
        return ["cp", "find", "du", "diff", "md5sum", "xargs", "tar", "git"]

    def phases(self, ctx):
        src, tree = self.p("tree"), os.path.join(ctx.dir, "tree")
        archive, unpacked = os.path.join(ctx.dir, "tree.tar"), os.path.join(ctx.dir, "unpacked")
        git = "git -c user.name=bench -c user.email=bench@bench.invalid -c gc.auto=0"

        def sh(name, script, *args):
            return Phase(name, ["sh", "-c", script, "sh"] + list(args), metric="time", unit="s",
                         timeout=7200)

        return [
            sh("cp-a", 'exec cp -a "$1" "$2"', src, tree),
            sh("find", 'find "$1" | wc -l', tree),
            sh("du", 'exec du -s "$1"', tree),
            sh("diff-r", 'exec diff -r --no-dereference "$1" "$2"', src, tree),
            sh("md5sum", 'find "$1" -type f -print0 | xargs -0 md5sum | wc -l', tree),
            sh("tar-c", 'exec tar -cf "$2" -C "$1" .', tree, archive),
            sh("tar-x", 'mkdir "$2" && exec tar -xf "$1" -C "$2"', archive, unpacked),
            sh("git-commit", 'cd "$1" && %s init -q && %s add -A && exec %s commit -qm tree'
               % (git, git, git), tree),
            sh("git-status", 'cd "$1" && git status --porcelain | wc -l', tree),
            sh("git-log-stat", 'cd "$1" && git log --stat | wc -l', tree),
        ]


def _sysbench_result(stdout):
    """sysbench's "total number of events" over its "total time", with its throughput."""
    events = re.search(r"total number of events:\s+(\d+)", stdout)
    seconds = re.search(r"total time:\s+([\d.]+)s", stdout)
    if not events or not seconds:
        return None
    read = re.search(r"read, MiB/s:\s+([\d.]+)", stdout)
    written = re.search(r"written, MiB/s:\s+([\d.]+)", stdout)
    extra = "read_mib_s=%s written_mib_s=%s" % (read.group(1) if read else "?",
                                                written.group(1) if written else "?")
    return int(events.group(1)), float(seconds.group(1)), extra


def _dbench_result(seconds):
    """The operations of dbench's table (counted after its warm-up) over its run time."""
    def parse(stdout):
        table = re.findall(r"^\s*[A-Za-z]+\s+(\d+)\s+[\d.]+\s+[\d.]+\s*$", stdout, re.M)
        rate = re.search(r"^Throughput ([\d.]+) MB/sec", stdout, re.M)
        if not table or not rate:
            return None
        return sum(int(n) for n in table), float(seconds), "mb_s=%s" % rate.group(1)
    return parse


class Exercisers(Workload):
    """Packaged file-system exercisers: sysbench fileio (random and sequential I/O through
    read/write, and random I/O through MAP_SHARED mappings of the same files) and dbench."""
    # seqwr rewrites the files from the start and leaves them short when its time runs out
    # (durable configurations): it comes after the phases that need the prepared sizes.
    phase_names = ("sysbench-rndrw", "sysbench-seqrd", "sysbench-mmap", "sysbench-seqwr",
                   "dbench")
    name = family = "exercisers"
    # dbench writes and removes as fast as it is served for its seconds: room for a fast run,
    # whose database also logs what each removal removes.
    fs_size = {"smoke": 512 * MIB, "full": 4 * GIB, "paper": 4 * GIB}
    params = {"smoke": dict(size=16 * MIB, files=4, seconds=1, clients=2, dbench_seconds=3),
              "full": dict(size=256 * MIB, files=16, seconds=8, clients=4, dbench_seconds=10),
              "paper": dict(size=GIB, files=64, seconds=60, clients=4, dbench_seconds=60)}

    def __init__(self, scale):
        super().__init__(scale)
        self.describe = ("sysbench fileio on %d files of %s in all, 16 KiB requests, fsync "
                         "every 100 (rndrw, seqrd, seqwr through read/write; mmap: rndrw "
                         "through MAP_SHARED mappings, msync as its fsync), %g s each; dbench "
                         "%d clients, %g s after its warm-up" % (
                             self.p("files"), _size(self.p("size")), self.p("seconds"),
                             self.p("clients"), self.p("dbench_seconds")))

    def needs(self):
        return ["sysbench", "dbench"]

    def _sysbench(self, ctx, *args):
        words = ["sysbench", "fileio", "--file-total-size=%d" % self.p("size"),
                 "--file-num=%d" % self.p("files")] + list(args)
        return ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", ctx.dir] + words

    def prepare(self, ctx):
        return [self._sysbench(ctx, "prepare")]

    def phases(self, ctx):
        seconds = self.p("seconds")
        timeout = seconds * 30 + 600

        def sysbench(name, mode, io="sync"):
            argv = self._sysbench(ctx, "--file-test-mode=%s" % mode, "--file-io-mode=%s" % io,
                                  "--time=%d" % seconds, "run")
            return Phase(name, argv, timeout=timeout, parse=_sysbench_result)

        dbench_seconds = self.p("dbench_seconds")
        dbench = ["dbench", "-D", os.path.join(ctx.dir, "dbench"), "-t", str(dbench_seconds),
                  "-c", "/usr/share/dbench/client.txt", str(self.p("clients"))]
        return [
            sysbench("sysbench-rndrw", "rndrw"),
            sysbench("sysbench-seqrd", "seqrd"),
            sysbench("sysbench-mmap", "rndrw", io="mmap"),
            sysbench("sysbench-seqwr", "seqwr"),
            Phase("dbench", ["sh", "-c", 'mkdir -p "$1" && shift && exec "$@"', "sh",
                             os.path.join(ctx.dir, "dbench")] + dbench,
                  timeout=dbench_seconds * 30 + 600, parse=_dbench_result(dbench_seconds)),
        ]


ORDER = ["postmark", "postmark-large", "postmark-many", "pmgen", "pmgen-large", "pmgen-many",
         "meta", "data", "build", "mail", "tools", "exercisers"]
DEFAULT = {"smoke": ["postmark", "pmgen", "meta", "data", "build", "mail", "tools", "exercisers"],
           "full": ORDER,
           "paper": ORDER}
SCALES = ("smoke", "full", "paper")


def cpus():
    """The CPUs this run may use (bench/run --cpus narrows them)."""
    return len(os.sched_getaffinity(0))


def make(name, scale):
    if name.startswith("postmark"):
        return Postmark(scale, name)
    if name.startswith("pmgen"):
        return Pmgen(scale, name)
    return {"meta": Meta, "data": Data, "build": Build, "mail": Mail, "tools": Tools,
            "exercisers": Exercisers}[name](scale)


def select(names, scale):
    if not names or names == "all":
        wanted = DEFAULT[scale] if not names else ORDER
    else:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in ORDER]
        if unknown:
            raise ValueError("unknown workload(s): %s (known: %s)" % (
                ", ".join(unknown), ", ".join(ORDER)))
    return [make(n, scale) for n in ORDER if n in wanted]


def _size(n):
    for unit, v in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= v and n % v == 0:
            return "%d %s" % (n // v, unit)
    return "%d B" % n


def _size_range(r):
    return "%s-%s" % (_size(r[0]), _size(r[1]))
