#include "monitor/mounts/proc_link.h"

#include <gtest/gtest.h>

namespace amino::monitor::mounts {
namespace {

using Kind = ProcLinkPath::Kind;

TEST(ProcLink, FindsEachLinkAndWhatFollowsIt) {
  auto cwd = ParseProcLink("/proc/self/cwd/a/b");
  EXPECT_EQ(cwd.kind, Kind::kCwd);
  EXPECT_EQ(cwd.pid, 0);
  EXPECT_EQ(cwd.rest, "/a/b");
  auto root = ParseProcLink("/proc/123/root/etc/passwd");
  EXPECT_EQ(root.kind, Kind::kRoot);
  EXPECT_EQ(root.pid, 123);
  EXPECT_EQ(root.rest, "/etc/passwd");
  auto fd = ParseProcLink("/proc/thread-self/fd/7/x/");
  EXPECT_EQ(fd.kind, Kind::kFd);
  EXPECT_EQ(fd.fd, 7);
  EXPECT_EQ(fd.rest, "/x/");
  auto task = ParseProcLink("/proc/42/task/43/cwd");
  EXPECT_EQ(task.kind, Kind::kCwd);
  EXPECT_EQ(task.pid, 42);
  EXPECT_EQ(task.rest, "");
  auto dev = ParseProcLink("/dev/fd/3/sub");
  EXPECT_EQ(dev.kind, Kind::kFd);
  EXPECT_EQ(dev.pid, 0);
  EXPECT_EQ(dev.fd, 3);
  EXPECT_EQ(dev.rest, "/sub");
}

TEST(ProcLink, EvaluatesTheWayToTheLinkAsTheKernelWould) {
  EXPECT_EQ(ParseProcLink("//proc/./self//cwd//x").rest, "//x");
  EXPECT_EQ(ParseProcLink("/proc/self/task/../cwd/x").kind, Kind::kCwd);
  // /dev/fd is /proc/self/fd: ".." after it is /proc/self.
  auto up = ParseProcLink("/dev/fd/../cwd/x");
  EXPECT_EQ(up.kind, Kind::kCwd);
  EXPECT_EQ(up.rest, "/x");
  EXPECT_EQ(ParseProcLink("/tmp/../proc/self/root/y").kind, Kind::kRoot);
  // ".." after the link belongs to what it leads to.
  EXPECT_EQ(ParseProcLink("/proc/self/cwd/../x").rest, "/../x");
}

TEST(ProcLink, LeavesEveryOtherPathAlone) {
  for (const char* path :
       {"/proc/self/status", "/proc/self/fd", "/proc/self/fd/x", "/proc/cwd/x", "/proc/0/cwd",
        "/proc/self/task/x/cwd", "/dev/fd", "/dev/shm/x", "proc/self/cwd/x", "/home/proc/self/cwd",
        "", "/proc/1234567890/cwd", "/proc/self/cwdx/y", "/proc/self/fd/3x"}) {
    EXPECT_EQ(ParseProcLink(path).kind, Kind::kNone) << path;
  }
}

}  // namespace
}  // namespace amino::monitor::mounts
