"""make -j2 building a small C project with gcc under `amino run`: the same objects, binary and
output as natively, and an incremental rebuild that rebuilds the same things."""

import ittest
from ittest import write

MODULES = [f"module_{n}" for n in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta")]

MAKEFILE = """\
CC = gcc
CFLAGS = -O2 -Wall -Werror
OBJS = main.o {objs}

app: $(OBJS)
\t$(CC) -o $@ $(OBJS)

%.o: %.c project.h
\t$(CC) $(CFLAGS) -c $< -o $@

report.txt: app
\t./app > $@

clean:
\trm -f app $(OBJS) report.txt

.PHONY: clean
"""


def project(root):
    decls = "".join(f"int {m}(int x);\n" for m in MODULES)
    write(root, "project.h", f"#pragma once\n{decls}")
    for i, m in enumerate(MODULES):
        write(root, f"{m}.c", f'#include "project.h"\n'
              f"int {m}(int x) {{ int s = {i}; for (int k = 0; k < x; ++k) s = s * 31 + k; "
              f"return s & 0xffff; }}\n")
    calls = "".join(f'  printf("{m}(%d) = %d\\n", n, {m}(n));\n' for m in MODULES)
    write(root, "main.c", '#include <stdio.h>\n#include <stdlib.h>\n#include "project.h"\n'
          "int main(int argc, char** argv) {\n  int n = argc > 1 ? atoi(argv[1]) : 10;\n"
          f"{calls}  return 0;\n}}\n")
    write(root, "Makefile", MAKEFILE.format(objs=" ".join(f"{m}.o" for m in MODULES)))


class MakeTest(ittest.ScenarioTest):
    def test_parallel_build_and_run(self):
        self.check(["/bin/sh", "-c",
                    "make -j2 -s && ./app 25 && make -j2 report.txt && cat report.txt && "
                    "make -q app; echo up-to-date status $?"],
                   setup=project, timeout=300, expect_status=0)

    def test_incremental_rebuild(self):
        # Sources older than their objects: only the touched file is rebuilt.
        self.check(["/bin/sh", "-c",
                    "make -j2 -s && touch -d 2000-01-01 *.c project.h && touch module_gamma.c && "
                    "make -j2 && ./app 3 && make clean && ls"],
                   setup=project, timeout=300, expect_status=0)

    def test_build_error(self):
        def broken(root):
            project(root)
            write(root, "module_delta.c", "int module_delta(int x) { return x +; }\n")
        # One job at a time: with -j2 the order of compiler messages varies natively too.
        self.check(["make", "-k"], setup=broken, timeout=300, expect_status=2)


if __name__ == "__main__":
    ittest.main()
