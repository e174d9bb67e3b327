"""Process trees under `amino run`: fork, vfork, clone3 and threads, an orphan that outlives its
parent (amino run waits for it), exec from a thread that is not the leader, and exec of a
setuid-root program by an unprivileged user."""

import os
import shutil

import ittest
from ittest import program, wait_for

# What programs/proctree.c's orphan writes, in one write(), after its parent exited.
ORPHAN_TEXT = b"written by an orphan after its parent exited\n"


def contents(path):
    """The bytes in path, or None while it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


class ProcessTreeTest(ittest.ScenarioTest):
    def test_fork(self):
        self.check([program("proctree"), "fork"], expect_status=0)

    def test_vfork(self):
        self.check([program("proctree"), "vfork"], expect_status=0)

    def test_clone3_and_threads(self):
        self.check([program("proctree"), "clone3"], expect_status=0)

    def test_exec_from_non_leader_thread(self):
        self.check([program("proctree"), "exec-thread"], expect_status=0)

    def test_orphan_outlives_parent(self):
        # Natively the command returns before the orphan writes its file; `amino run` waits for
        # every process of the tree, so the file is there the moment it returns.
        def after(mode, scratch):
            orphan = os.path.join(scratch, "orphan.txt")
            if mode == "native":
                self.assertTrue(wait_for(lambda: contents(orphan) == ORPHAN_TEXT, 10),
                                f"native: the orphan never wrote its file: {contents(orphan)}")
            else:
                self.assertTrue(os.path.exists(orphan),
                                f"{mode}: amino run returned before the orphan wrote {orphan}")

        self.check([program("proctree"), "orphan"], after=after, expect_status=0)

    def test_orphan_status_is_the_commands(self):
        # The tree outlives the command: the status is still the command's.
        # Natively the file is compared once written whole (it is created before it is written).
        self.check(["/bin/sh", "-c", "(sleep 0.5; echo late > late.txt; exit 9) & exit 5"],
                   after=lambda mode, scratch: wait_for(
                       lambda: contents(os.path.join(scratch, "late.txt")) == b"late\n", 10),
                   expect_status=5)

    def test_inherited_attributes(self):
        # What a command inherits from its caller: environment, umask, limits, ignored and
        # blocked signals, capabilities, no_new_privs. (Seccomp and TracerPid show the monitor by
        # design and are left out.)
        self.check(["/bin/sh", "-c", "env | sort; umask; ulimit -a; grep -E "
                    "'^(Umask|SigBlk|SigIgn|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' "
                    "/proc/self/status; /bin/sh -c 'grep -E \"^(SigIgn|NoNewPrivs)\" "
                    "/proc/self/status'"], env={"EXTRA_VARIABLE": "value with spaces"},
                   expect_status=0)

    def test_setuid_root_program_as_nobody(self):
        # Run as root; the command drops to nobody and executes a setuid-root copy of `id`: the
        # kernel gives it euid 0 natively, and it must print the same under amino.
        if os.geteuid() != 0:
            self.fail("this test runs as root: it makes a setuid-root program")

        def setup(root):
            shutil.copy("/usr/bin/id", os.path.join(root, "id-suid"))
            os.chown(os.path.join(root, "id-suid"), 0, 0)
            os.chmod(os.path.join(root, "id-suid"), 0o4755)

        drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        self.check(drop + ["/bin/sh", "-c", "id; ./id-suid; ./id-suid -u; ./id-suid -ru; "
                           "touch mine 2>&1; echo touch status $?"],
                   setup=setup, expect_status=0)
        self.check(["su", "-s", "/bin/sh", "nobody", "-c", "./id-suid -u; id -u"], setup=setup,
                   expect_status=0)


if __name__ == "__main__":
    ittest.main()
