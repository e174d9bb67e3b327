// The table's argument roles and last-link rules, checked against what the kernel does.
#include "monitor/syscall_table.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace amino::monitor {
namespace {

TEST(SyscallTableTest, EveryDirectoryDescriptorPrecedesAPath) {
  for (long nr = 0; nr < 512; ++nr) {
    const SyscallInfo* info = FindSyscall(nr);
    if (!info) continue;
    for (int i = 0; i < 6; ++i) {
      if (info->args[i] != Arg::kDirFd) continue;
      ASSERT_LT(i, 5) << info->name;
      EXPECT_EQ(info->args[i + 1], Arg::kPath) << info->name << " argument " << i;
    }
    if (info->file) {
      EXPECT_NE(info->family, Family::kOther) << info->name;
    }
    if (info->last_link == LastLink::kUnlessNoFollow || info->last_link == LastLink::kIfFollow) {
      EXPECT_GE(AtFlagsArg(*info), 0) << info->name;
    }
  }
}

TEST(SyscallTableTest, PathSlotsSkipNamesAndTargets) {
  PathSlot s[2];
  ASSERT_EQ(PathSlots(*FindSyscall(SYS_renameat2), s), 2);
  EXPECT_EQ(s[0].arg, 1);
  EXPECT_EQ(s[0].dirfd_arg, 0);
  EXPECT_EQ(s[1].arg, 3);
  EXPECT_EQ(s[1].dirfd_arg, 2);
  ASSERT_EQ(PathSlots(*FindSyscall(SYS_symlinkat), s), 1);
  EXPECT_EQ(s[0].arg, 2);
  EXPECT_EQ(s[0].dirfd_arg, 1);
  ASSERT_EQ(PathSlots(*FindSyscall(SYS_lsetxattr), s), 1);
  EXPECT_EQ(s[0].arg, 0);
  EXPECT_EQ(s[0].dirfd_arg, -1);
  EXPECT_EQ(PathSlots(*FindSyscall(SYS_fgetxattr), s), 0);
  ASSERT_EQ(PathSlots(*FindSyscall(SYS_link), s), 2);
  EXPECT_EQ(s[1].arg, 1);
}

// Whether the kernel followed a link: the call's effect on a file reached through a link,
// compared with the table's rule, for the calls whose effect is easy to observe.
class LastLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/amino-lastlink-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/file";
    link_ = dir_ + "/link";
    int fd = open(file_.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "0123456789", 10), 10);
    close(fd);
    ASSERT_EQ(symlink("file", link_.c_str()), 0);
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }
  bool Rule(long nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
            uint64_t a4 = 0) {
    const uint64_t args[6] = {a0, a1, a2, a3, a4, 0};
    return FollowsLastLink(*FindSyscall(nr), args);
  }
  std::string dir_, file_, link_;
};

TEST_F(LastLinkTest, StatCallsFollowAsTheKernelDoes) {
  struct stat st;
  for (int flags : {0, AT_SYMLINK_NOFOLLOW}) {
    ASSERT_EQ(syscall(SYS_newfstatat, AT_FDCWD, link_.c_str(), &st, flags), 0);
    EXPECT_EQ(!S_ISLNK(st.st_mode), Rule(SYS_newfstatat, 0, 0, 0, flags)) << flags;
    struct statx sx;
    ASSERT_EQ(syscall(SYS_statx, AT_FDCWD, link_.c_str(), flags, STATX_TYPE, &sx), 0);
    EXPECT_EQ(!S_ISLNK(sx.stx_mode), Rule(SYS_statx, 0, 0, flags)) << flags;
  }
  ASSERT_EQ(syscall(SYS_stat, link_.c_str(), &st), 0);
  EXPECT_EQ(!S_ISLNK(st.st_mode), Rule(SYS_stat));
  ASSERT_EQ(syscall(SYS_lstat, link_.c_str(), &st), 0);
  EXPECT_EQ(!S_ISLNK(st.st_mode), Rule(SYS_lstat));
}

TEST_F(LastLinkTest, ChangesReachTheFileOnlyWhenFollowed) {
  struct stat st;
  ASSERT_EQ(syscall(SYS_truncate, link_.c_str(), 4), 0);
  ASSERT_EQ(stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_size == 4, Rule(SYS_truncate));
  ASSERT_EQ(syscall(SYS_chmod, link_.c_str(), 0600), 0);
  ASSERT_EQ(stat(file_.c_str(), &st), 0);
  EXPECT_EQ((st.st_mode & 0777) == 0600, Rule(SYS_chmod));
  // Times: utimensat on the link with and without AT_SYMLINK_NOFOLLOW.
  for (int flags : {AT_SYMLINK_NOFOLLOW, 0}) {
    const timespec times[2] = {{1000 + flags, 0}, {1000 + flags, 0}};
    ASSERT_EQ(syscall(SYS_utimensat, AT_FDCWD, link_.c_str(), times, flags), 0);
    ASSERT_EQ(stat(file_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mtime == 1000 + flags, Rule(SYS_utimensat, 0, 0, 0, flags)) << flags;
  }
  // linkat makes a new name for the link itself unless told to follow it.
  for (int flags : {0, AT_SYMLINK_FOLLOW}) {
    const std::string name = dir_ + "/hard" + std::to_string(flags);
    ASSERT_EQ(syscall(SYS_linkat, AT_FDCWD, link_.c_str(), AT_FDCWD, name.c_str(), flags), 0);
    ASSERT_EQ(lstat(name.c_str(), &st), 0);
    EXPECT_EQ(!S_ISLNK(st.st_mode), Rule(SYS_linkat, 0, 0, 0, 0, flags)) << flags;
  }
  // Names are never followed: unlink removes the link.
  ASSERT_EQ(syscall(SYS_unlink, link_.c_str()), 0);
  EXPECT_EQ(access(file_.c_str(), F_OK) == 0, !Rule(SYS_unlink));
}

}  // namespace
}  // namespace amino::monitor
