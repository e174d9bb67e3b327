#include "ptrace-ext/seccomp_filter.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace amino::ptrace_ext {
namespace {

// Runs `body` in a child that installed `rules` first; its exit status (100: no filter).
template <typename Body>
int InChildWithFilter(const std::vector<TrapRule>& rules, Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!InstallFilter(rules, nullptr).empty()) _exit(100);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The errno of fcntl(0, cmd, min) with the whole register given, or 0 when it succeeded.
int FcntlErrno(int cmd, uint64_t min) {
  const long r = syscall(SYS_fcntl, 0, cmd, min);
  if (r >= 0) close(static_cast<int>(r));
  return r < 0 ? errno : 0;
}

TEST(SeccompFilterTest, ARuleWithTwoComparisonsMatchesOnlyWhenBothHold) {
  // The shape of the notify backend's fcntl rules: a copy to the lowest free number and a copy
  // with a minimum told apart, refused here with two errnos to see which rule matched.
  TrapRule lowest{SYS_fcntl, false, 1, 0xffffffff, F_DUPFD_CLOEXEC, ENOTTY};
  lowest.arg2 = 2, lowest.mask2 = ~uint64_t{0}, lowest.value2 = 0;
  TrapRule above{SYS_fcntl, false, 1, 0xffffffff, F_DUPFD_CLOEXEC, EXDEV};
  above.arg2 = 2, above.cmp2 = TrapRule::Cmp::kGreater, above.value2 = 0;
  const int status = InChildWithFilter({lowest, above}, [] {
    if (FcntlErrno(F_DUPFD_CLOEXEC, 0) != ENOTTY) return 1;
    if (FcntlErrno(F_DUPFD_CLOEXEC, 5) != EXDEV) return 2;
    // The upper half of the minimum's register: the second rule, never both.
    if (FcntlErrno(F_DUPFD_CLOEXEC, uint64_t{1} << 32) != EXDEV) return 3;
    // Another command, or the same minimum with another command: no rule.
    if (FcntlErrno(F_DUPFD, 0) != 0) return 4;
    if (fcntl(0, F_GETFD) < 0) return 5;
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(SeccompFilterTest, ARuleWithOneComparisonIgnoresTheOtherArguments) {
  TrapRule copy{SYS_fcntl, false, 1, 0xffffffff, F_DUPFD, EXDEV};
  const int status = InChildWithFilter({copy}, [] {
    if (FcntlErrno(F_DUPFD, 0) != EXDEV || FcntlErrno(F_DUPFD, 9) != EXDEV) return 1;
    if (FcntlErrno(F_DUPFD_CLOEXEC, 0) != 0) return 2;
    return 0;
  });
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace amino::ptrace_ext
