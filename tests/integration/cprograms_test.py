"""C programs under `amino run`: redirections made with dup2, fork and exec; a descriptor passed
over a UNIX socket (SCM_RIGHTS) to a child; what descriptors and open file descriptions share
(offsets, flags, locks, mappings); eight threads writing one file with pwrite; FIFOs and device
nodes made in the scratch directory, opened by several processes; a thread's CPUs as another
thread sees them while it opens files."""

import os

import ittest
from ittest import program, write


class CProgramsTest(ittest.ScenarioTest):
    def test_dup2_fork_exec_redirections(self):
        def setup(root):
            write(root, "in.txt", "twenty-one bytes long")
            for name in ("pear", "apple", "fig", "banana"):
                write(root, f"dir/{name}", name)

        self.check([program("redirect")], setup=setup, expect_status=0)

    def test_descriptor_passing(self):
        def setup(root):
            write(root, "secret.txt", "read through a passed descriptor\n", 0o600)

        self.check([program("scm_rights")], setup=setup, expect_status=0)

    def test_open_file_descriptions(self):
        self.check([program("descriptors")], expect_status=0)

    def test_removed_files_and_directories_still_open(self):
        # fstat through descriptors of removed files and directories, and what an O_PATH
        # descriptor allows.
        self.check([program("removed_dirs")], expect_status=0)

    def test_shared_mappings_between_processes(self):
        # Stores through MAP_SHARED mappings are seen at once by another process's mapping and
        # by read(); write() and ftruncate() are seen in the mappings; close keeps the stores.
        self.check([program("shared_mapping")], expect_status=0)

    def test_mappings_while_signals_arrive(self):
        # Under notify a mapping of a served file (and a process's first file mapping) is
        # restarted to stop for the monitor: signals arriving meanwhile must not show.
        self.check([program("mapping_signals")], expect_status=0)

    def test_fifos_and_device_nodes(self):
        if os.geteuid() != 0:
            self.fail("this test runs as root: it makes device nodes and opens as nobody")
        self.check([program("special_nodes")], expect_status=0)

    def test_threads_pwrite_disjoint_regions(self):
        self.check([program("threads_io")], expect_status=0)

    def test_cpus_of_a_thread_while_another_opens(self):
        # The monitor keeps a caller on its own CPU while it installs a descriptor: no thread
        # of the program may see that, and the program's own pinning stands.
        self.check([program("affinity_watch")], expect_status=0)

    def test_threads_pwrite_repeated(self):
        # Interleavings vary from run to run; the result must not.
        self.check(["/bin/sh", "-c", f"for i in 1 2 3 4 5; do {program('threads_io')} || exit; "
                    "md5sum shared.bin; done"], expect_status=0)


if __name__ == "__main__":
    ittest.main()
