#include "monitor/service/deferral_policy.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

namespace amino::monitor::service {
namespace {

// How many of the next `calls` calls numbered `nr` try, when every try is refused.
int TriesWhenAllRefused(DeferralPolicy& p, long nr, int calls) {
  int tries = 0;
  for (int i = 0; i < calls; ++i) {
    if (p.ShouldTry(nr)) {
      ++tries;
      p.Tried(nr, true);
    }
  }
  return tries;
}

TEST(DeferralPolicyTest, EveryCallTriesWhileTriesSucceed) {
  DeferralPolicy p;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(p.ShouldTry(SYS_newfstatat)) << "call " << i;
    p.Tried(SYS_newfstatat, false);
  }
}

TEST(DeferralPolicyTest, TheAccessTimeCheckTriesAndOtherCallsDoNot) {
  DeferralPolicy p;
  EXPECT_TRUE(p.ShouldTry(DeferralPolicy::kAccessTime));
  EXPECT_EQ(TriesWhenAllRefused(p, DeferralPolicy::kAccessTime, 69), 6);
  for (long nr : {long{SYS_write}, long{SYS_openat}, long{SYS_unlink}}) {
    EXPECT_FALSE(p.ShouldTry(nr)) << nr;
  }
}

TEST(DeferralPolicyTest, RefusalsBackOffToOneTryIn65) {
  DeferralPolicy p;
  // Tries at calls 0, 2, 5, 10, 19, 36, 69, then every 65th.
  EXPECT_EQ(TriesWhenAllRefused(p, SYS_fstatfs, 69), 6);
  DeferralPolicy q;
  const int first = TriesWhenAllRefused(q, SYS_fstatfs, 69 + 65 * 100);
  EXPECT_EQ(first, 6 + 100);
}

TEST(DeferralPolicyTest, OneSuccessMakesTheNumberTryEveryTimeAgain) {
  DeferralPolicy p;
  TriesWhenAllRefused(p, SYS_newfstatat, 500);  // backed off fully
  int calls_until_try = 0;
  while (!p.ShouldTry(SYS_newfstatat)) ++calls_until_try;
  EXPECT_LE(calls_until_try, DeferralPolicy::kMaxSkip);
  p.Tried(SYS_newfstatat, false);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(p.ShouldTry(SYS_newfstatat));
    p.Tried(SYS_newfstatat, false);
  }
  // A single refusal after that skips one chance only.
  ASSERT_TRUE(p.ShouldTry(SYS_newfstatat));
  p.Tried(SYS_newfstatat, true);
  EXPECT_FALSE(p.ShouldTry(SYS_newfstatat));
  EXPECT_TRUE(p.ShouldTry(SYS_newfstatat));
}

TEST(DeferralPolicyTest, CallsThatChangeNeverTryAndCallsThatLookDo) {
  DeferralPolicy p;
  for (long nr : {SYS_write, SYS_pwrite64, SYS_openat, SYS_close, SYS_rename, SYS_renameat2,
                  SYS_unlink, SYS_mkdir, SYS_setxattr, SYS_chmod, SYS_lseek}) {
    EXPECT_FALSE(p.ShouldTry(nr)) << "system call " << nr;
  }
  for (long nr : {SYS_stat, SYS_lstat, SYS_fstat, SYS_newfstatat, SYS_statx, SYS_access,
                  SYS_faccessat2, SYS_readlinkat, SYS_getxattr, SYS_statfs, SYS_read, SYS_pread64,
                  SYS_readv, SYS_preadv2, SYS_getdents64}) {
    EXPECT_TRUE(p.ShouldTry(nr)) << "system call " << nr;
  }
}

TEST(DeferralPolicyTest, NumbersAreKeptApartAndOutOfRangeNeverTries) {
  DeferralPolicy p;
  TriesWhenAllRefused(p, SYS_statx, 500);
  EXPECT_TRUE(p.ShouldTry(SYS_newfstatat));
  EXPECT_FALSE(p.ShouldTry(-1));
  EXPECT_FALSE(p.ShouldTry(DeferralPolicy::kAccessTime + 1));  // the last number kept
}

}  // namespace
}  // namespace amino::monitor::service
