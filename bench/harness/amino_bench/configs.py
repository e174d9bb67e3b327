"""The configurations compared, one declarative row each (the paper's nine, §4, plus the
interception backends and the durability modes added since).

A row says where the workload's files live (ext3 mounted normally or with -o sync, or an Amino
mount whose database sits on an ext2 file system), what runs the workload (nothing, strace -cf,
or `amino run` with the options listed), whether the workload uses libamino transactions, and
what the configuration guarantees. Whether a row can run is decided by probing the tools, never
by editing the table: a row whose `requires` are not met is reported as "unavailable: <why>".
"""

import dataclasses
import os
import re
import shutil
import subprocess


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    summary: str
    guarantees: str          # what a user gets: the report labels every result with it
    fs: str = "ext3"         # "ext3": the workload runs on ext3; "amino": on an Amino mount
    mount_options: str = ""  # ext3 options for the measured runs ("sync" for VANSYNC)
    tracer: str = ""         # "", "strace" or "amino"
    amino_options: tuple = ()  # {mountpoint} and {db} are filled in per run
    requires: tuple = ()     # features of the amino binary and the build (see probe())
    txn: bool = False        # the workload wraps its operations in libamino transactions
    # Every completed operation is flushed to disk: smaller workloads. Not external synchrony,
    # which flushes only before output leaves the traced tree: it runs the sizes AMINOACI runs,
    # so that the two compare operation for operation.
    durable: bool = False
    paper: str = ""          # the configuration's name in bench/paper.csv ("" if new)
    backend: str = ""        # an explicit --backend (n/a when it is what auto picks)


def _amino_mount(durability, txn=False):
    return dict(fs="amino", tracer="amino",
                amino_options=("--mount", "{mountpoint}={db}", "--durability", durability),
                requires=("mount", "durability:" + durability) + (("libamino",) if txn else ()),
                txn=txn)


# Interception backends `amino run --backend` may offer; a row per backend, measured when the
# binary lists it and it is not the one the default (auto) picks anyway.
BACKENDS = ("seccomp", "ptrace", "notify")

CONFIGS = [
    Config("VANILLA", "ext3 on a loop device", "atomic per call (journal), not durable",
           paper="VANILLA"),
    Config("VANSYNC", "ext3 mounted -o sync", "durable per call", mount_options="sync",
           durable=True, paper="VANSYNC"),
    Config("STRACE", "ext3, the workload under strace -cf", "as VANILLA", tracer="strace",
           requires=("strace",), paper="STRACE"),
    # Tracing alone: every call goes to the kernel (the default, --emulate=amino, would also
    # classify each path against the mount table).
    Config("AMINOTRACE", "ext3, the workload under amino run --emulate=none (default backend)",
           "as VANILLA", tracer="amino", amino_options=("--emulate=none",),
           requires=("emulate:none",), paper="AMINOTRACE"),
] + [
    Config("AMINOTRACE+" + b, "ext3, amino run --emulate=none --backend " + b, "as VANILLA",
           tracer="amino", amino_options=("--backend", b, "--emulate=none"),
           requires=("backend:" + b, "emulate:none"), backend=b, paper="AMINOTRACE")
    for b in BACKENDS
] + [
    Config("AMINONULL", "ext3, every file call performed by the monitor (--emulate=host)",
           "as VANILLA", tracer="amino", amino_options=("--emulate=host",), paper="AMINONULL"),
] + [
    Config("AMINONULL+" + b, "ext3, --emulate=host with --backend " + b, "as VANILLA",
           tracer="amino", amino_options=("--backend", b, "--emulate=host"),
           requires=("backend:" + b,), backend=b, paper="AMINONULL")
    for b in BACKENDS
] + [
    Config("AMINOACI", "Amino mount, database on ext2, --durability async",
           "ACI per call, not durable", paper="AMINOACI", **_amino_mount("async")),
    Config("AMINOACID", "Amino mount, --durability sync", "ACID per call", durable=True,
           paper="AMINOACID", **_amino_mount("sync")),
    Config("AMINOTXN", "Amino mount, async; the workload uses libamino transactions",
           "ACI per application transaction, not durable", paper="AMINOTXN",
           **_amino_mount("async", txn=True)),
    Config("AMINODTXN", "Amino mount, --durability commit; libamino transactions",
           "ACID per application transaction", durable=True, paper="AMINODTXN",
           **_amino_mount("commit", txn=True)),
    Config("AMINOXSYNC", "Amino mount, --durability external (external synchrony)",
           "ACID per call as observed from outside the traced tree",
           **_amino_mount("external")),
]

BY_NAME = {c.name: c for c in CONFIGS}


@dataclasses.dataclass
class Features:
    """What the tools on this machine offer; `have` holds feature names, `why` says why not."""
    have: set
    why: dict
    amino_help: str = ""
    libamino_dir: str = ""
    auto_backend: str = ""   # what `amino run` picks by default here


def probe(amino, libamino=None):
    """Feature names: "amino", "strace", "emulate:none", "mount", "durability:<mode>",
    "libamino"."""
    have, why = set(), {}
    help_text = ""
    if amino and os.access(amino, os.X_OK):
        r = subprocess.run([amino, "run", "--help"], capture_output=True, text=True)
        help_text = r.stdout + r.stderr
        if r.returncode == 0:
            have.add("amino")
        else:
            why["amino"] = "`%s run --help` exited %d" % (amino, r.returncode)
    else:
        why["amino"] = "no amino binary at %s" % amino
    auto = ""
    if "amino" in have:
        r = subprocess.run([amino, "run", "--stats", "--", "true"], capture_output=True,
                           text=True)
        m = re.search(r"amino: backend (\w+)", r.stderr)
        auto = m.group(1) if m else ""
    m = re.search(r"--backend\b[^\n]*", help_text)
    for b in BACKENDS:
        if m and re.search(r"\b%s\b" % b, m.group(0)):
            have.add("backend:" + b)
        else:
            why["backend:" + b] = "amino run --backend does not offer '%s'" % b
    if shutil.which("strace"):
        have.add("strace")
    else:
        why["strace"] = "strace is not installed"
    m = re.search(r"--emulate\b([^\n]*(\n\s{20,}[^\n]*)*)", help_text)
    if m and re.search(r"\bnone\b", m.group(1)):
        have.add("emulate:none")
    else:
        why["emulate:none"] = "amino run --emulate does not offer 'none' (tracing only)"
    if re.search(r"--mount\b", help_text):
        have.add("mount")
    else:
        why["mount"] = "amino run has no --mount option yet (Amino mounts)"
    m = re.search(r"--durability\b([^\n]*(\n\s{20,}[^\n]*)*)", help_text)
    for mode in ("async", "sync", "commit", "external"):
        if m and re.search(r"\b%s\b" % mode, m.group(1)):
            have.add("durability:" + mode)
        elif m:
            why["durability:" + mode] = "amino run --durability does not list '%s'" % mode
        else:
            why["durability:" + mode] = "amino run has no --durability option yet"
    libdir = ""
    candidates = [libamino] if libamino else []
    if amino:
        build = os.path.dirname(os.path.abspath(amino))
        candidates += [os.path.join(build, "libamino.so"),
                       os.path.join(build, "src", "libamino", "libamino.so"),
                       os.path.join(build, "..", "libamino", "libamino.so"),
                       os.path.join(build, "..", "..", "src", "libamino", "libamino.so"),
                       os.path.join(build, "..", "src", "libamino", "libamino.so")]
    for c in candidates:
        if c and os.path.exists(c):
            have.add("libamino")
            libdir = os.path.dirname(os.path.abspath(c))
            break
    else:
        why["libamino"] = "libamino.so is not built yet (looked beside %s)" % (amino or "amino")
    return Features(have=have, why=why, amino_help=help_text, libamino_dir=libdir,
                    auto_backend=auto)


def skip_reason(config, features):
    """None when the configuration runs here, else "unavailable: <why>" (it cannot run yet) or
    "n/a: <why>" (it would measure the same thing as another row)."""
    if config.backend and config.backend == features.auto_backend:
        return "n/a: the default backend is %s here (measured by the row without +%s)" % (
            config.backend, config.backend)
    needs = list(config.requires)
    if config.tracer == "amino":
        needs.insert(0, "amino")
    reasons = []
    for n in needs:
        r = features.why.get(n, "missing " + n)
        if n not in features.have and r not in reasons:
            reasons.append(r)
    if reasons:
        return "unavailable: " + "; ".join(reasons)
    return None


def select(names):
    """Configurations by name (comma list; "all" or empty: every row), in table order."""
    if not names or names == "all":
        return list(CONFIGS)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        raise ValueError("unknown configuration(s): %s (known: %s)" % (
            ", ".join(unknown), ", ".join(BY_NAME)))
    return [c for c in CONFIGS if c.name in wanted]
