#!/usr/bin/env python3
"""The Debian package (cmake/AminoPackage.cmake, issue 18): cpack builds amino_VERSION_ARCH.deb
from the build tree; its control data names the package, its version and the Depends that
dpkg-shlibdeps found (Berkeley DB, libseccomp, the C and C++ runtimes); it holds /usr/bin/amino,
the libraries with their SONAME links, headers, pkg-config files, the CMake package, gzipped
manual pages, bash completion and the examples, and nothing of the tests or benchmarks; once
unpacked, its amino runs and its manual page renders. (Installed with apt on a fresh Debian 12:
debian_root_test.py, on demand.)

Environment: AMINO_BUILD_DIR (a configured and built tree), AMINO_VERSION."""

import glob
import os
import sys

from install_common import check, main, run, say

BUILD = os.environ.get("AMINO_BUILD_DIR", "")
VERSION = os.environ.get("AMINO_VERSION", "")


def body(scratch):
    run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B",
         scratch], "cpack -G DEB")
    debs = glob.glob(os.path.join(scratch, "amino_*.deb"))
    check(len(debs) == 1, "cpack made %r" % os.listdir(scratch))
    deb = debs[0]
    field = lambda name: run(["dpkg-deb", "-f", deb, name], "dpkg-deb -f").strip()
    check(field("Package") == "amino", "Package: %r" % field("Package"))
    check(field("Version") == VERSION, "Version: %r, not %r" % (field("Version"), VERSION))
    depends = field("Depends")
    for lib in ("libc6", "libdb5.3", "libseccomp2", "libstdc++6"):
        check(lib in depends, "Depends lacks %s: %r" % (lib, depends))
    files = set(line.split()[-1] for line in run(["dpkg-deb", "-c", deb], "dpkg-deb -c")
                .splitlines() if line.strip())
    names = {f.lstrip(".") for f in files}
    for want in ("/usr/bin/amino", "/usr/include/amino/amino.h", "/usr/include/amino/rvm.h",
                 "/usr/share/man/man1/amino-run.1.gz", "/usr/share/man/man3/amino.3.gz",
                 "/usr/share/bash-completion/completions/amino",
                 "/usr/share/amino/examples/counter.c",
                 "/usr/share/amino/profiles/whole-program.profile",
                 "/usr/lib/python3/dist-packages/amino/__init__.py"):
        check(want in names, "%s is not in the package" % want)
    libs = [n for n in names if "/libamino.so" in n or "/librvm.so" in n or n.endswith(".pc")
            or n.endswith("AminoConfig.cmake")]
    check(any(n.endswith("libamino.so.0") for n in names), "no libamino.so.0: %r" % libs)
    check(any(n.endswith("librvm.so.0") for n in names), "no librvm.so.0: %r" % libs)
    check(any(n.endswith("/amino.pc") for n in names), "no amino.pc: %r" % libs)
    check(any(n.endswith("/AminoConfig.cmake") for n in names), "no CMake package: %r" % libs)
    strays = [n for n in names if "/test" in n or "bench" in n or "gtest" in n]
    check(not strays, "the package holds tests or benchmarks: %r" % strays)
    root = os.path.join(scratch, "root")
    run(["dpkg-deb", "-x", deb, root], "dpkg-deb -x")
    version = run([os.path.join(root, "usr/bin/amino"), "--version"], "the packaged amino")
    check(VERSION in version, "amino --version says %r" % version)
    page = run(["man", "-l", os.path.join(root, "usr/share/man/man1/amino-run.1.gz")], "man -l",
               env=dict(os.environ, MANWIDTH="80"))
    check("amino run" in page, "the packaged amino-run(1) renders as %r" % page[:200])
    say("%s: %d files; Depends: %s" % (os.path.basename(deb), len(names), depends))


def start():
    if not BUILD or not VERSION:
        sys.exit("AMINO_BUILD_DIR and AMINO_VERSION must be set (ctest sets them)")
    return main(body, "amino-deb-")


if __name__ == "__main__":
    sys.exit(start())
