"""Trees of files for the scenario tests (ittest.py): made, stamped with fixed times, and
compared between a native run and a run under Amino."""

import difflib
import fnmatch
import hashlib
import os
import stat

FIXED_TIME = 1622548800  # 2021-06-01 12:00:00 UTC: every scratch tree's times


def write(root, rel, data=b"", mode=0o644):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    return path


def set_fixed_times(root):
    """Gives every entry under root (root included) the same atime and mtime."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames + dirnames:
            os.utime(os.path.join(dirpath, name), (FIXED_TIME, FIXED_TIME),
                     follow_symlinks=False)
    os.utime(root, (FIXED_TIME, FIXED_TIME))


def snapshot(root, volatile=()):
    """What a user sees of a tree: for each path, its type, permission bits, owner, link count,
    extended attributes (ACLs included), size and contents (regular files, the scratch path in
    them normalised) or target (symlinks).
    Directory sizes are left out: they depend on the file system's history, not on the calls
    made. Paths in `volatile` (relative, fnmatch patterns) keep no size and contents: those vary
    from run to run natively too."""
    tree = {}
    root_bytes = os.fsencode(root)

    def visit(rel):
        path = os.path.join(root, rel) if rel else root
        st = os.lstat(path)
        kind = stat.S_IFMT(st.st_mode)
        entry = {"type": kind, "mode": oct(stat.S_IMODE(st.st_mode)), "uid": st.st_uid,
                 "gid": st.st_gid}
        if not stat.S_ISDIR(st.st_mode):
            entry["nlink"] = st.st_nlink
        if not stat.S_ISLNK(st.st_mode):
            names = sorted(os.listxattr(path, follow_symlinks=False))
            if names:
                entry["xattrs"] = {n: os.getxattr(path, n, follow_symlinks=False) for n in names}
        is_volatile = any(fnmatch.fnmatch(rel, p) for p in volatile)
        if stat.S_ISREG(st.st_mode) and not is_volatile:
            with open(path, "rb") as f:
                data = f.read().replace(root_bytes, b"$SCRATCH")
            entry["size"] = st.st_size
            entry["sha256"] = hashlib.sha256(data).hexdigest()
            if len(data) <= 200:
                entry["data"] = data
        elif stat.S_ISLNK(st.st_mode):
            entry["target"] = os.readlink(path).replace(root, "$SCRATCH")
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            entry["rdev"] = st.st_rdev
        tree[rel or "."] = entry
        if stat.S_ISDIR(st.st_mode):
            for name in sorted(os.listdir(path)):
                visit(os.path.join(rel, name) if rel else name)

    visit("")
    return tree


def diff_trees(want, got, limit=25):
    lines = []
    for rel in sorted(set(want) | set(got)):
        if rel not in got:
            lines.append(f"  missing: {rel} {want[rel]}")
        elif rel not in want:
            lines.append(f"  unexpected: {rel} {got[rel]}")
        elif want[rel] != got[rel]:
            fields = sorted(k for k in set(want[rel]) | set(got[rel])
                            if want[rel].get(k) != got[rel].get(k))
            detail = ", ".join(f"{k}: native {want[rel].get(k)!r} vs {got[rel].get(k)!r}"
                               for k in fields)
            lines.append(f"  differs: {rel}: {detail}")
        if len(lines) >= limit:
            lines.append("  ...")
            break
    return lines


# ---------------------------------------------------------------------------------------------
# Processes


def first_difference(a, b, context=2, limit=60):
    """The differences between two outputs, as a unified diff (native: -, amino: +)."""
    al = a.decode(errors="replace").splitlines()
    bl = b.decode(errors="replace").splitlines()
    diff = list(difflib.unified_diff(al, bl, "native", "amino", n=context, lineterm=""))
    if len(diff) > limit:
        diff = diff[:limit] + [f"... ({len(diff) - limit} more diff lines)"]
    return "\n".join("   " + line for line in diff)
