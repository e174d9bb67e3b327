#!/usr/bin/env python3
"""`cmake --install` gives a tree programs can be built against and run from (issue 18): the
build installed under a scratch prefix holds bin/amino, libamino and librvm with their SONAMEs
(and static), the headers, amino.pc and amino-rvm.pc, the CMake package, the examples, the
manual pages and bash completion. examples/counter.c is built against the installed tree with `pkg-config --cflags
--libs amino` and with find_package(Amino) (shared and static), librvm is linked both ways,
and the pkg-config build runs under the installed amino on a mount: four concurrent counters
end at the exact total. The completion script completes subcommands and option values.

Environment: AMINO_BUILD_DIR (the build tree to install), AMINO_SOURCE_DIR."""

import glob
import os
import shutil
import sys

from install_common import check, main, run, say

BUILD = os.environ.get("AMINO_BUILD_DIR", "")
SOURCE = os.environ.get("AMINO_SOURCE_DIR", "")
def soname(path):
    out = run(["readelf", "-d", path], "readelf -d " + path)
    for line in out.splitlines():
        if "(SONAME)" in line:
            return line.split("[", 1)[1].rstrip("]")
    return None


def body(scratch):
    prefix = os.path.join(scratch, "prefix")
    run(["cmake", "--install", BUILD, "--prefix", prefix], "cmake --install")
    libdirs = [d for d in glob.glob(os.path.join(prefix, "lib*")) + glob.glob(
        os.path.join(prefix, "lib", "*-linux-gnu")) if glob.glob(os.path.join(d, "libamino.so*"))]
    check(len(libdirs) == 1, "no single directory holds libamino.so: %r" % libdirs)
    libdir = libdirs[0]
    for rel in ("bin/amino", "include/amino/amino.h", "include/amino/rvm.h",
                "share/bash-completion/completions/amino", "share/amino/examples/counter.c",
                "share/amino/profiles/whole-program.profile",
                "share/man/man1/amino.1.gz", "share/man/man1/amino-run.1.gz",
                "share/man/man1/amino-txn.1.gz", "share/man/man8/amino-mkfs.8.gz",
                "share/man/man5/amino-mounts.5.gz", "share/man/man3/amino.3.gz",
                "share/man/man3/amino-rvm.3.gz"):
        check(os.path.exists(os.path.join(prefix, rel)), "not installed: " + rel)
    for lib, so in (("amino", "libamino.so.0"), ("rvm", "librvm.so.0")):
        check(os.path.islink(os.path.join(libdir, "lib%s.so" % lib)), "no lib%s.so link" % lib)
        check(soname(os.path.join(libdir, "lib%s.so" % lib)) == so, "lib%s's SONAME is not %s" %
              (lib, so))
        check(os.path.isfile(os.path.join(libdir, "lib%s.a" % lib)), "no lib%s.a" % lib)
        check(os.path.isfile(os.path.join(libdir, "pkgconfig", "%s.pc" % (
            "amino" if lib == "amino" else "amino-rvm"))), "no pkg-config file for " + lib)
    check(os.path.isfile(os.path.join(libdir, "cmake", "Amino", "AminoConfig.cmake")),
          "no CMake package")
    page = run(["man", "-l", os.path.join(prefix, "share/man/man1/amino-run.1.gz")], "man -l",
               env=dict(os.environ, MANWIDTH="80"))
    check("amino run" in page and "--durability" in page, "amino-run(1) renders as %r" % page[:200])
    listed = run([os.path.join(prefix, "bin/amino"), "profile", "list"], "amino profile list")
    check(os.path.join(prefix, "share/amino/profiles/whole-program.profile") in listed,
          "the installed amino does not list its installed profiles first:\n" + listed)
    say("installed under %s (libraries in %s)" % (prefix, os.path.relpath(libdir, prefix)))

    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"))
    got = run(["pkg-config", "--variable=prefix", "amino"], "pkg-config", env=env).strip()
    check(os.path.realpath(got) == os.path.realpath(prefix),
          "amino.pc's prefix is %r, not the install prefix" % got)
    flags = run(["pkg-config", "--cflags", "--libs", "amino"], "pkg-config", env=env).split()
    counter = os.path.join(scratch, "counter")
    example = os.path.join(prefix, "share/amino/examples/counter.c")
    run(["cc", "-std=c17", "-D_POSIX_C_SOURCE=200809L", "-o", counter, example] + flags,
        "cc with pkg-config flags")
    rvm_flags = run(["pkg-config", "--cflags", "--libs", "--static", "amino-rvm"], "pkg-config",
                    env=env).split()
    rvm_prog = os.path.join(scratch, "rvmprog.c")
    with open(rvm_prog, "w") as f:
        f.write("#include <amino/rvm.h>\nint main(void) { return rvm_depth() < 0; }\n")
    run(["cc", "-o", os.path.join(scratch, "rvmprog"), rvm_prog] + rvm_flags,
        "cc with amino-rvm's flags")
    say("built counter.c and an rvm program with pkg-config's flags")

    project = os.path.join(scratch, "project")
    os.mkdir(project)
    shutil.copy(example, project)
    shutil.copy(rvm_prog, project)
    with open(os.path.join(project, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.25)\nproject(uses_amino C CXX)\n"
                "find_package(Amino 0.1 REQUIRED)\n"
                "add_executable(counter counter.c)\n"
                "target_compile_definitions(counter PRIVATE _POSIX_C_SOURCE=200809L)\n"
                "target_link_libraries(counter PRIVATE Amino::amino)\n"
                "add_executable(counter_static counter.c)\n"
                "target_compile_definitions(counter_static PRIVATE _POSIX_C_SOURCE=200809L)\n"
                "target_link_libraries(counter_static PRIVATE Amino::amino_static)\n"
                "add_executable(rvmprog rvmprog.c)\n"
                "target_link_libraries(rvmprog PRIVATE Amino::rvm)\n"
                "add_executable(rvmprog_static rvmprog.c)\n"
                "target_link_libraries(rvmprog_static PRIVATE Amino::rvm_static)\n")
    pbuild = os.path.join(scratch, "project-build")
    run(["cmake", "-S", project, "-B", pbuild, "-DCMAKE_PREFIX_PATH=" + prefix],
        "configuring a project that uses find_package(Amino)")
    run(["cmake", "--build", pbuild], "building it")
    say("built counter.c and an rvm program with find_package(Amino), shared and static")

    db = os.path.join(scratch, "db")
    mp = os.path.join(scratch, "m")
    amino = os.path.join(prefix, "bin", "amino")
    run([amino, "mkfs", db], "the installed amino mkfs")
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    n = os.path.join(mp, "n")
    out = run([amino, "run", "--mount", "%s=%s" % (mp, db), "--", "sh", "-c",
               "for i in 1 2 3 4; do %s %s 50 & done; wait; cat %s" % (counter, n, n)],
              "four counters under the installed amino", env=env)
    check(out.split() == ["200"], "four counters of 50 ended at %r, not 200" % out)
    say("four counters built with pkg-config ran under the installed amino: 200")

    completion = os.path.join(prefix, "share/bash-completion/completions/amino")
    for words, want in ((["amino", "r"], {"run", "recover"}),
                        (["amino", "run", "--backend", "n"], {"notify"}),
                        (["amino", "run", "--durability", ""], {"async", "sync", "commit",
                                                                 "external"}),
                        (["amino", "txn", "a"], {"abort"})):
        script = "source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _amino; echo \"${COMPREPLY[@]}\"" % (
            completion, " ".join("'%s'" % w for w in words), len(words) - 1)
        got = set(run(["bash", "-c", script], "completion of %r" % words).split())
        check(got == want, "completing %r gave %r, not %r" % (" ".join(words), got, want))
    say("bash completion completes subcommands and option values")


def start():
    if not BUILD or not SOURCE:
        sys.exit("AMINO_BUILD_DIR and AMINO_SOURCE_DIR must be set (ctest sets them)")
    return main(body, "amino-install-")


if __name__ == "__main__":
    sys.exit(start())
