#!/usr/bin/env python3
"""The `passwd-tools` profile on a real useradd (shadow's, as root) working in a tree on a
mount (useradd -P PREFIX): `useradd -m` whose home directory cannot be made (PREFIX/home is a
file) exits 12 after it has already written the new user to passwd and shadow.

  profile  under `passwd-tools`: passwd, shadow and group are byte for byte as before
  control  with no profile: the user is in passwd and shadow, although useradd failed
  success  a useradd that succeeds under the profile adds the user to passwd and shadow

Needs root (useradd refuses otherwise): exits 77, which ctest reports as not run.
"""

import os
import sys

import profiles_common as pc

mc = pc.mc

FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/bash\nusers:x:100:100::/nonexistent:/bin/false\n",
    "etc/shadow": "root:*:19000:0:99999:7:::\nusers:*:19000:0:99999:7:::\n",
    "etc/group": "root:x:0:\nusers:x:100:\n",
    "etc/gshadow": "root:*::\nusers:*::\n",
    "etc/login.defs": "",
}


def body(args, scratch):
    fs = pc.Fs(scratch, "fs", args.backend)
    for tree in ("profile", "control", "success"):
        script = ["mkdir -p %s/%s/etc" % (fs.mp, tree)]
        for rel, text in FILES.items():
            script.append("printf '%%s' '%s' > %s/%s/%s" % (text, fs.mp, tree, rel))
        if tree != "success":
            script.append("echo file > %s/%s/home" % (fs.mp, tree))  # home cannot be made
        else:
            script.append("mkdir %s/%s/home" % (fs.mp, tree))
        fs.run(["sh", "-c", " && ".join(script)])
    before = fs.files("profile")

    for tree, profiles, want_rc in (("profile", ["passwd-tools"], 12), ("control", [], 12),
                                    ("success", ["passwd-tools"], 0)):
        rc, out, err = fs.run(["useradd", "-P", fs.path(tree), "-m", "newbie"], profiles,
                              check=False, what="useradd in %s" % tree)
        if rc != want_rc:
            raise pc.Failure("useradd -m in %s under %s exited %d, expected %d\n%s" % (
                tree, profiles or "no profile", rc, want_rc, err))
        left = fs.files(tree)
        added = all(b"newbie:" in left.get(f, b"") for f in ("etc/passwd", "etc/shadow"))
        if tree == "profile" and {k: v for k, v in left.items() if k != "home"} != \
                {k: v for k, v in before.items() if k != "home"}:
            raise pc.Failure("the failed useradd under passwd-tools changed the files: %r" % {
                k: v for k, v in left.items() if before.get(k) != v})
        if tree != "profile" and not added:
            raise pc.Failure("useradd in %s under %s did not add newbie to passwd and "
                             "shadow: %r" % (tree, profiles or "no profile", left))
        pc.say("%s: useradd exited %d; newbie %s" % (
            tree, rc, "added" if added else "not added, every file as before"))
    fs.fsck("useradd")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("passwd_test: useradd needs root; not run")
        sys.exit(77)
    sys.exit(mc.main(body, __doc__, pc.backend_option))
