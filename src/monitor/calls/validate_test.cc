// The validation functions against the running kernel: each case makes the real call with the
// same bad argument and a path or descriptor that would fail differently (a missing file, a bad
// descriptor, an empty name), and the function must predict the kernel's errno — the one that
// wins. Cases with valid arguments check that nothing is reported where the kernel goes on.
#include "monitor/calls/validate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/limits.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "monitor/syscall_numbers.h"

namespace amino::monitor::calls {
namespace {

constexpr int kBadFd = 987;  // never open in this test
constexpr uint64_t kCwd = static_cast<uint64_t>(AT_FDCWD);
constexpr const char* kMissing = "missing/entry";

// A scratch directory with a regular file "f"; the test runs in it.
class ValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/amino-validate-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(getcwd(old_cwd_, sizeof old_cwd_), old_cwd_);
    ASSERT_EQ(chdir(dir_.c_str()), 0);
    file_ = open("f", O_RDWR | O_CREAT, 0644);
    ASSERT_GE(file_, 0);
  }
  void TearDown() override {
    close(file_);
    ASSERT_EQ(chdir(old_cwd_), 0);
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  // errno of a raw call, 0 on success.
  static int Errno(long r) { return r < 0 ? errno : 0; }

  std::string dir_;
  char old_cwd_[4096];
  int file_ = -1;
};

std::array<uint64_t, 6> Args(std::initializer_list<uint64_t> values) {
  std::array<uint64_t, 6> a{};
  size_t i = 0;
  for (uint64_t v : values) a[i++] = v;
  return a;
}

uint64_t Ptr(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST_F(ValidateTest, FlagErrorsComeBeforeDescriptorAndPathErrors) {
  struct Case {
    long nr;
    std::array<uint64_t, 6> args;
  };
  const uint64_t bad = static_cast<uint64_t>(kBadFd);
  const std::vector<Case> cases = {
      {SYS_unlinkat, Args({bad, Ptr(""), 0x1})},
      {SYS_renameat2, Args({bad, Ptr(kMissing), bad, Ptr(kMissing), 0x80})},
      {SYS_renameat2,
       Args({bad, Ptr(kMissing), bad, Ptr(kMissing), RENAME_EXCHANGE | RENAME_NOREPLACE})},
      {SYS_faccessat2, Args({bad, Ptr(""), 0, 0x1})},
      {SYS_faccessat2, Args({bad, Ptr(kMissing), 8, 0})},
      {SYS_faccessat, Args({bad, Ptr(kMissing), 8})},
      {SYS_fchownat, Args({bad, Ptr(kMissing), ~0ull, ~0ull, 0x1})},
      {SYS_fchmodat2, Args({bad, Ptr(""), 0644, 0x1})},
      {SYS_linkat, Args({bad, Ptr(""), bad, Ptr(""), 0x1})},
      {SYS_readlinkat, Args({bad, Ptr(kMissing), Ptr(nullptr), 0})},
      {SYS_truncate, Args({Ptr(""), static_cast<uint64_t>(-1)})},
      {SYS_setxattr, Args({Ptr(kMissing), Ptr("user.x"), Ptr("v"), 1, 4})},
      {SYS_openat, Args({bad, Ptr(kMissing), O_TMPFILE | O_RDONLY, 0600})},
      {SYS_openat, Args({bad, Ptr(""), O_CREAT | O_DIRECTORY, 0600})},
      {SYS_mknodat, Args({bad, Ptr(kMissing), S_IFDIR | 0600, 0})},
      {SYS_mknodat, Args({bad, Ptr(kMissing), 0170000 | 0600, 0})},
  };
  for (const Case& c : cases) {
    const int predicted = EarlyErrno(c.nr, c.args);
    const auto& a = c.args;
    const int actual = Errno(syscall(c.nr, a[0], a[1], a[2], a[3], a[4], a[5]));
    EXPECT_NE(predicted, 0) << "call " << c.nr;
    EXPECT_EQ(predicted, actual) << "call " << c.nr;
  }
}

TEST_F(ValidateTest, ValidArgumentsReportNothing) {
  const std::vector<std::pair<long, std::array<uint64_t, 6>>> cases = {
      {SYS_unlinkat, Args({kCwd, Ptr(kMissing), AT_REMOVEDIR})},
      {SYS_renameat2, Args({kCwd, Ptr(kMissing), kCwd, Ptr(kMissing), RENAME_NOREPLACE})},
      {SYS_faccessat2, Args({kCwd, Ptr("f"), R_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW})},
      {SYS_fchownat, Args({kCwd, Ptr("f"), ~0ull, ~0ull, AT_SYMLINK_NOFOLLOW})},
      {SYS_linkat, Args({kCwd, Ptr(kMissing), kCwd, Ptr("g"), AT_SYMLINK_FOLLOW})},
      {SYS_openat, Args({kCwd, Ptr("f"), O_PATH | O_RDWR | O_CREAT | O_TRUNC, 0644})},
      {SYS_openat, Args({kCwd, Ptr("f"), 0x80000000u | O_RDONLY, 0})},  // ignored by openat
  };
  for (const auto& [nr, a] : cases) {
    EXPECT_EQ(EarlyErrno(nr, a), 0) << "call " << nr;
    // The kernel went on to the path: not EINVAL.
    EXPECT_NE(Errno(syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5])), EINVAL) << "call " << nr;
  }
}

TEST_F(ValidateTest, StatxChecksMaskAndFlagsExceptForTheDescriptorShortcut) {
  struct statx sx;
  EXPECT_EQ(ValidateStatx(0, STATX__RESERVED, false), EINVAL);
  EXPECT_EQ(Errno(syscall(SYS_statx, kBadFd, "", 0, STATX__RESERVED, &sx)), EINVAL);
  EXPECT_EQ(ValidateStatx(AT_STATX_SYNC_TYPE, 0, true), EINVAL);
  EXPECT_EQ(Errno(syscall(SYS_statx, file_, "", AT_EMPTY_PATH | AT_STATX_SYNC_TYPE, 0, &sx)),
            EINVAL);
  // An unknown flag: rejected on the path walk, ignored by the descriptor shortcut.
  EXPECT_EQ(ValidateStatx(0x1, 0, false), EINVAL);
  EXPECT_EQ(Errno(syscall(SYS_statx, kBadFd, kMissing, 0x1, 0, &sx)), EINVAL);
  EXPECT_TRUE(StatsDescriptorItself(SYS_statx, file_, true, AT_EMPTY_PATH | 0x1));
  EXPECT_EQ(ValidateStatx(AT_EMPTY_PATH | 0x1, 0, true), 0);
  EXPECT_EQ(Errno(syscall(SYS_statx, file_, "", AT_EMPTY_PATH | 0x1, 0, &sx)), 0);
  // AT_FDCWD never takes the shortcut.
  EXPECT_FALSE(StatsDescriptorItself(SYS_statx, AT_FDCWD, true, AT_EMPTY_PATH | 0x1));
  EXPECT_EQ(Errno(syscall(SYS_statx, AT_FDCWD, "", AT_EMPTY_PATH | 0x1, 0, &sx)), EINVAL);
  // newfstatat takes it for AT_EMPTY_PATH alone.
  struct stat st;
  EXPECT_FALSE(StatsDescriptorItself(SYS_newfstatat, file_, true, AT_EMPTY_PATH | 0x1));
  EXPECT_TRUE(StatsDescriptorItself(SYS_newfstatat, file_, true, AT_EMPTY_PATH));
  EXPECT_EQ(ValidateFstatatFlags(0x80000000u), EINVAL);
  EXPECT_EQ(Errno(syscall(SYS_newfstatat, kBadFd, "", &st, 0x80000000u)), EINVAL);
}

TEST_F(ValidateTest, EmptyPathsAreAllowedOnlyWithAtEmptyPath) {
  EXPECT_FALSE(EmptyPathAllowed(SYS_fchownat, 1, Args({0, 0, 0, 0, 0})));
  EXPECT_EQ(Errno(syscall(SYS_fchownat, kBadFd, "", -1, -1, 0)), ENOENT);
  EXPECT_TRUE(EmptyPathAllowed(SYS_fchownat, 1, Args({0, 0, 0, 0, AT_EMPTY_PATH})));
  EXPECT_EQ(Errno(syscall(SYS_fchownat, kBadFd, "", -1, -1, AT_EMPTY_PATH)), EBADF);
  // linkat: the old path only.
  EXPECT_TRUE(EmptyPathAllowed(SYS_linkat, 1, Args({0, 0, 0, 0, AT_EMPTY_PATH})));
  EXPECT_FALSE(EmptyPathAllowed(SYS_linkat, 3, Args({0, 0, 0, 0, AT_EMPTY_PATH})));
  EXPECT_EQ(Errno(syscall(SYS_linkat, AT_FDCWD, "f", kBadFd, "", AT_EMPTY_PATH)), ENOENT);
  // readlinkat looks an empty path up on its descriptor.
  EXPECT_TRUE(EmptyPathAllowed(SYS_readlinkat, 1, Args({})));
  EXPECT_EQ(Errno(syscall(SYS_readlinkat, kBadFd, "", old_cwd_, 10)), EBADF);
  EXPECT_FALSE(EmptyPathAllowed(SYS_mkdirat, 1, Args({})));
  EXPECT_EQ(Errno(syscall(SYS_mkdirat, kBadFd, "", 0700)), ENOENT);
}

TEST_F(ValidateTest, XattrNameThenSizeThenPath) {
  const std::string long_name = "user." + std::string(251, 'n');  // 256 bytes
  const std::string longest = long_name.substr(0, 255);
  EXPECT_EQ(ValidateXattrName(long_name, false), ERANGE);
  EXPECT_EQ(ValidateXattrName("", false), ERANGE);
  EXPECT_EQ(ValidateXattrName(longest, false), 0);
  EXPECT_EQ(ValidateXattrName(longest, true), ERANGE);
  EXPECT_EQ(Errno(syscall(SYS_getxattr, kMissing, long_name.c_str(), nullptr, 0)), ERANGE);
  EXPECT_EQ(Errno(syscall(SYS_removexattr, kMissing, "")), ERANGE);
  EXPECT_EQ(Errno(syscall(SYS_getxattr, kMissing, longest.c_str(), nullptr, 0)), ENOENT);
  std::vector<char> value(XATTR_SIZE_MAX + 1);
  EXPECT_EQ(ValidateXattrValueSize(value.size()), E2BIG);
  EXPECT_EQ(ValidateXattrValueSize(XATTR_SIZE_MAX), 0);
  EXPECT_EQ(Errno(syscall(SYS_setxattr, kMissing, "user.x", value.data(), value.size(), 0)), E2BIG);
  // The name is checked before the size.
  EXPECT_EQ(
      Errno(syscall(SYS_setxattr, kMissing, long_name.c_str(), value.data(), value.size(), 0)),
      ERANGE);
  EXPECT_EQ(ValidateSetxattrFlags(XATTR_CREATE | XATTR_REPLACE), 0);
  EXPECT_EQ(ValidateSetxattrFlags(4), EINVAL);
}

TEST_F(ValidateTest, OpenHowAsOpenat2ChecksIt) {
  auto openat2 = [](const open_how& how, size_t size = sizeof(open_how)) {
    long r = syscall(SYS_openat2, AT_FDCWD, "f", &how, size);
    if (r >= 0) close(static_cast<int>(r));
    return r < 0 ? errno : 0;
  };
  const std::vector<open_how> hows = {
      {O_RDONLY, 0600, 0},                      // a mode without O_CREAT
      {O_PATH | O_RDWR, 0, 0},                  // O_PATH with an access mode
      {O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, 0},  // what O_PATH permits
      {0x80000000ull, 0, 0},                    // an unknown flag
      {O_RDONLY, 0, RESOLVE_BENEATH | RESOLVE_IN_ROOT},
      {O_RDONLY, 0, 0x100},                      // an unknown resolve flag
      {O_RDWR | O_CREAT, 010000, 0},             // a mode bit beyond S_IALLUGO
      {O_RDWR | O_CREAT, 0600, RESOLVE_CACHED},  // EAGAIN
      {O_TMPFILE | O_RDONLY, 0600, 0},
      {O_RDWR, 0, 0},
  };
  for (const open_how& how : hows) {
    EXPECT_EQ(ValidateOpenHow(how), openat2(how))
        << "flags " << std::hex << how.flags << " mode " << how.mode << " resolve " << how.resolve;
  }
  open_how valid{O_RDONLY, 0, 0};
  EXPECT_EQ(ValidateOpenHowSize(16), EINVAL);
  EXPECT_EQ(openat2(valid, 16), EINVAL);
  EXPECT_EQ(ValidateOpenHowSize(8192), E2BIG);
  const unsigned char zeros[8] = {}, nonzero[8] = {0, 0, 1};
  EXPECT_EQ(ValidateOpenHowTail(zeros), 0);
  EXPECT_EQ(ValidateOpenHowTail(nonzero), E2BIG);
  struct {
    open_how how;
    unsigned char tail[8];
  } longer = {valid, {0, 0, 1}};
  EXPECT_EQ(Errno(syscall(SYS_openat2, AT_FDCWD, "f", &longer, sizeof longer)), E2BIG);
  // openat drops what openat2 refuses.
  const open_how built = OpenHowOf(O_PATH | O_RDWR | O_TRUNC, 0600);
  EXPECT_EQ(built.flags, static_cast<uint64_t>(O_PATH));
  EXPECT_EQ(built.mode, 0u);
  EXPECT_EQ(ValidateOpenHow(built), 0);
}

TEST_F(ValidateTest, UtimensatOmitOmitSucceedsBeforeAnythingElse) {
  const struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
  const struct timespec bad_ns[2] = {{0, 1000000000}, {0, UTIME_OMIT}};
  EXPECT_TRUE(UtimesNothingToDo(omit));
  EXPECT_EQ(Errno(syscall(SYS_utimensat, kBadFd, kMissing, omit, 0x1)), 0);
  EXPECT_FALSE(UtimesNothingToDo(nullptr));
  EXPECT_EQ(ValidateUtimensatFlags(0x1, false), EINVAL);
  EXPECT_EQ(Errno(syscall(SYS_utimensat, kBadFd, kMissing, nullptr, 0x1)), EINVAL);
  // futimens takes no flags at all.
  EXPECT_EQ(ValidateUtimensatFlags(AT_SYMLINK_NOFOLLOW, true), EINVAL);
  EXPECT_EQ(Errno(syscall(SYS_utimensat, file_, nullptr, nullptr, AT_SYMLINK_NOFOLLOW)), EINVAL);
  // Invalid nanoseconds only after the path was found.
  EXPECT_FALSE(UtimesNothingToDo(bad_ns));
  EXPECT_EQ(ValidateUtimes(bad_ns), EINVAL);
  EXPECT_EQ(Errno(syscall(SYS_utimensat, kBadFd, kMissing, bad_ns, 0)), EBADF);
  EXPECT_EQ(Errno(syscall(SYS_utimensat, AT_FDCWD, "f", bad_ns, 0)), EINVAL);
}

}  // namespace
}  // namespace amino::monitor::calls
