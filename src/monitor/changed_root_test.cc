// Paths after a chroot, mapped onto the host, checked against the kernel's own walk in a
// chrooted child (differential; chroot needs root, the test is skipped without it).
#include "monitor/changed_root.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace amino::monitor {
namespace {

TEST(ChangedRoot, NoChangeLeavesPathsAlone) {
  EXPECT_EQ(HostPathInRoot("/", "/a/../b"), "/a/../b");
  EXPECT_EQ(*PathFromRoot("/", "/a/b"), "/a/b");
  EXPECT_EQ(CwdFromRoot("/", "/a"), "/a");
}

TEST(ChangedRoot, DotDotAtTheRootStaysThere) {
  EXPECT_EQ(HostPathInRoot("/r/s", "/"), "/r/s");
  EXPECT_EQ(HostPathInRoot("/r/s", "/.."), "/r/s");
  EXPECT_EQ(HostPathInRoot("/r/s", "/../../m/f"), "/r/s/m/f");
  EXPECT_EQ(HostPathInRoot("/r/s", "/m/../../x"), "/r/s/m/../x");
  EXPECT_EQ(HostPathInRoot("/r/s/", "//m//f/"), "/r/s/m/f/");
  EXPECT_EQ(HostPathInRoot("/r/s", "/m/."), "/r/s/m/.");
}

TEST(ChangedRoot, ClimbsAfterANameAreKeptForTheWalksCheck) {
  // "/l/../.." climbs above the root only lexically: l may lead to a deeper directory.
  EXPECT_EQ(HostPathInRoot("/r/s", "/l/../../m/f", true), "/r/s/l/../../m/f");
  EXPECT_EQ(HostPathInRoot("/r/s", "/l/../../m/f"), "/r/s/l/../m/f");
  // Leading ".." never left the root: dropped either way.
  EXPECT_EQ(HostPathInRoot("/r/s", "/../../m/f", true), "/r/s/m/f");
  EXPECT_EQ(HostPathInRoot("/r/s", "/m/../../x", true), "/r/s/m/../../x");
}

TEST(ChangedRoot, HostPathsNamedFromTheRoot) {
  EXPECT_EQ(*PathFromRoot("/r/s", "/r/s"), "/");
  EXPECT_EQ(*PathFromRoot("/r/s", "/r/s/m/f"), "/m/f");
  EXPECT_FALSE(PathFromRoot("/r/s", "/r/st").has_value());
  EXPECT_FALSE(PathFromRoot("/r/s", "/r").has_value());
  EXPECT_EQ(CwdFromRoot("/r/s", "/r/s/m"), "/m");
  EXPECT_EQ(CwdFromRoot("/r/s", "/tmp"), "(unreachable)/tmp");
}

// The kernel, chrooted to a scratch directory, and the mapping agree on where each path leads.
TEST(ChangedRoot, AgreesWithTheKernelsWalk) {
  if (geteuid() != 0) GTEST_SKIP() << "chroot needs root";
  char tmpl[] = "/tmp/amino-root-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string top = tmpl;
  const std::string root = top + "/jail";
  for (const char* d : {"/jail", "/jail/m", "/jail/m/sub", "/jail/x", "/m", "/x"}) {
    ASSERT_EQ(mkdir((top + d).c_str(), 0755), 0) << d;
  }
  const std::vector<std::string> paths = {"/",
                                          "/..",
                                          "/../..",
                                          "/m",
                                          "/../m",
                                          "/m/..",
                                          "/m/../..",
                                          "/x",
                                          "/m/sub/../..",
                                          "/m/../../x",
                                          "//m//sub//",
                                          "/m/sub/.",
                                          "/../../m/sub/../../x"};
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipefd[0]);
    if (chroot(root.c_str()) != 0 || chdir("/") != 0) _exit(2);
    for (const std::string& p : paths) {
      struct stat st {};
      if (stat(p.c_str(), &st) != 0) st.st_ino = 0;
      if (write(pipefd[1], &st.st_ino, sizeof st.st_ino) != sizeof st.st_ino) _exit(3);
    }
    _exit(0);
  }
  close(pipefd[1]);
  for (const std::string& p : paths) {
    ino_t kernel = 0;
    ASSERT_EQ(read(pipefd[0], &kernel, sizeof kernel), static_cast<ssize_t>(sizeof kernel));
    struct stat mapped {};
    const std::string host = HostPathInRoot(root, p);
    ASSERT_EQ(stat(host.c_str(), &mapped), 0) << p << " -> " << host;
    EXPECT_EQ(mapped.st_ino, kernel) << p << " -> " << host;
  }
  close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(system(("rm -rf " + top).c_str()), 0);
}

}  // namespace
}  // namespace amino::monitor
