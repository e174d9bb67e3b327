"""How diff_fuzz.py compares two runs of fuzz_ops: the output of each side, the first
difference between them (with a signature naming the kind of bug), and the report of both."""

import difflib
import re

FSCK_MARK = "# amino fsck exited"  # the line that starts a failed check of a mount's database


class Side:
    """The output of one run: status, stdout lines, stderr, and the tree as listed natively."""

    def __init__(self, status, lines, stderr, tree):
        self.status, self.lines, self.stderr, self.tree = status, lines, stderr, tree



class Mismatch:
    """The first difference: the operation (None: the tree or the exit status), a description,
    and a signature that names the kind of bug (call, native result, amino result)."""

    def __init__(self, op, text, signature):
        self.op, self.text, self.signature = op, text, signature


def outcome(line):
    """"ENOENT", "ok" or "missing" for an operation line."""
    if line is None:
        return "missing"
    m = re.search(r" = -1 (E\w+)", line)
    return m.group(1) if m else "ok"


def line_mismatch(a, b, status, stderr):
    m = re.match(r"(\d+) ([a-z0-9_]+)", a or "") or re.match(r"(\d+) ([a-z0-9_]+)", b or "")
    text = f"\n    native: {a or '<end of output>'}\n    amino:  {b or '<end of output>'}"
    if b is None:
        text += f"\n    (amino side exit status {status}; stderr: {stderr.strip()[-500:]})"
    if not m:
        if (b or "").startswith(FSCK_MARK):
            return Mismatch(None, text, "amino fsck")
        tree = (a or b or "").startswith("tree ")
        return Mismatch(None, text, "tree" if tree else "output")
    sig = f"{m.group(2)} {outcome(a)}/{outcome(b)}"
    return Mismatch(int(m.group(1)), text, sig)


def first_mismatch(native, other):
    """The first difference between two runs, or None."""
    for a, b in zip(native.lines, other.lines):
        if a != b:
            return line_mismatch(a, b, other.status, other.stderr)
    if len(native.lines) != len(other.lines):
        n = min(len(native.lines), len(other.lines))
        a = native.lines[n] if n < len(native.lines) else None
        b = other.lines[n] if n < len(other.lines) else None
        return line_mismatch(a, b, other.status, other.stderr)
    if native.status != other.status:
        return Mismatch(None, f"exit status: native {native.status}, amino {other.status}; "
                        f"stderr: {other.stderr.strip()[-500:]}", "exit status")
    if native.tree is not None and native.tree != other.tree:
        for a, b in zip(native.tree + ["<end>"], other.tree + ["<end>"]):
            if a != b:
                return Mismatch(None, f"tree as root lists it:\n    native: {a}\n    amino:  {b}",
                                "tree")
    return None


def side_by_side(native, other):
    out = ["  native output:"] + ["    " + line for line in native.lines]
    diff = list(difflib.unified_diff(native.lines, other.lines, "native", "amino", n=1,
                                     lineterm=""))
    out.append("  difference (native -, amino +):")
    out += ["    " + line for line in diff[:80]]
    if native.tree is not None and native.tree != other.tree:
        out.append("  tree as root lists it (native -, amino +):")
        out += ["    " + line for line in difflib.unified_diff(
            native.tree, other.tree, "native", "amino", n=0, lineterm="")][:40]
    if other.stderr.strip():
        out.append("  amino side stderr:")
        out += ["    " + line for line in other.stderr.strip().splitlines()[-20:]]
    return out

