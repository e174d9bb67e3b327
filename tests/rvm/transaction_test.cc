// Transactions: begin/commit/abort and their nesting rules, write detection (one before-image per
// page and level), page protections after each step, rvm_set_range and rvm_abort_to.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "amino/rvm.h"
#include "rvm_test_util.h"

namespace amino::rvm::testing {
namespace {

rvm_stats Stats() {
  rvm_stats s;
  rvm_thread_stats(&s);
  return s;
}

TEST(TransactionTest, DepthFollowsBeginCommitAndAbort) {
  EXPECT_EQ(rvm_depth(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(rvm_depth(), 1);
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(rvm_depth(), 2);
  EXPECT_EQ(rvm_commit(), 0);
  EXPECT_EQ(rvm_depth(), 1);
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(rvm_abort(), 0);
  EXPECT_EQ(rvm_depth(), 1);
  EXPECT_EQ(rvm_commit(), 0);
  EXPECT_EQ(rvm_depth(), 0);
}

TEST(TransactionTest, CommitAndAbortOutsideATransactionFail) {
  EXPECT_EQ(rvm_commit(), EINVAL);
  EXPECT_EQ(rvm_abort(), EINVAL);
  EXPECT_EQ(rvm_prepare_in(nullptr), EINVAL);
  EXPECT_EQ(rvm_abort_to(1), EINVAL);
  EXPECT_EQ(rvm_abort_to(-1), EINVAL);
  EXPECT_EQ(rvm_abort_to(0), 0);
}

TEST(TransactionTest, CommitKeepsAndAbortRestores) {
  Region r(16 * PageBytes());
  char* m = r.bytes();
  ASSERT_EQ(rvm_begin(), 0);
  std::memcpy(m + 10, "committed", 9);
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(std::string(m + 10, 9), "committed");

  ASSERT_EQ(rvm_begin(), 0);
  // A write across a page boundary, and one in a page never written before.
  std::memset(m + PageBytes() - 3, 'x', 6);
  std::memcpy(m + 10, "CHANGED!!", 9);
  m[9 * PageBytes() + 7] = 'y';
  EXPECT_EQ(m[PageBytes() + 2], 'x');
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(std::string(m + 10, 9), "committed");
  for (size_t i = PageBytes() - 3; i < PageBytes() + 3; ++i) EXPECT_EQ(m[i], 0) << i;
  EXPECT_EQ(m[9 * PageBytes() + 7], 0);
}

TEST(TransactionTest, OneBeforeImagePerPageAndLevel) {
  Region r(8 * PageBytes());
  char* m = r.bytes();
  ASSERT_EQ(rvm_begin(), 0);
  rvm_stats s0 = Stats();
  m[0] = 1;
  m[1] = 2;
  m[100] = 3;
  rvm_stats s1 = Stats();
  EXPECT_EQ(s1.faults - s0.faults, 1u) << "only the first write to a page faults";
  EXPECT_EQ(s1.before_images - s0.before_images, 1u);
  EXPECT_EQ(s1.pages_logged, 1u);

  ASSERT_EQ(rvm_begin(), 0);  // the nested level needs the page as it finds it
  m[2] = 4;
  m[3] = 5;
  rvm_stats s2 = Stats();
  EXPECT_EQ(s2.before_images - s1.before_images, 1u);
  EXPECT_EQ(s2.pages_logged, 1u) << "still one page";
  ASSERT_EQ(rvm_commit(), 0);

  // Back in the parent, which has its own image: a write costs at most a fault, no new image.
  m[4] = 6;
  rvm_stats s3 = Stats();
  EXPECT_EQ(s3.before_images, s2.before_images);
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(Stats().pages_logged, 0u);
}

TEST(TransactionTest, PagesAreWritableOnlyInsideTheTransactionThatWroteThem) {
  Region r(8 * PageBytes());
  char* m = r.bytes();
  EXPECT_EQ(WritableBytes(r.get()), 0u);
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(WritableBytes(r.get()), 0u) << "begin alone makes nothing writable";
  m[0] = 1;
  m[3 * PageBytes()] = 1;
  EXPECT_EQ(WritableBytes(r.get()), 2 * PageBytes());
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(WritableBytes(r.get()), 0u) << "a nested level starts with every page protected";
  m[PageBytes()] = 1;
  EXPECT_EQ(WritableBytes(r.get()), PageBytes());
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(WritableBytes(r.get()), 0u);
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(WritableBytes(r.get()), 0u);
  EXPECT_EQ(m[0], 1);
  EXPECT_EQ(m[3 * PageBytes()], 1);
  EXPECT_EQ(m[PageBytes()], 0);
}

TEST(TransactionTest, NestedAbortRestoresOnlyTheChild) {
  Region r(4 * PageBytes());
  char* m = r.bytes();
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 'p';            // parent only
  m[PageBytes()] = 'P';  // parent, then child
  ASSERT_EQ(rvm_begin(), 0);
  m[PageBytes()] = 'C';
  m[2 * PageBytes()] = 'c';  // child only
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(m[0], 'p');
  EXPECT_EQ(m[PageBytes()], 'P');
  EXPECT_EQ(m[2 * PageBytes()], 0);
  // The parent can still write the pages and its abort still restores them.
  m[PageBytes()] = 'Q';
  m[2 * PageBytes()] = 'q';
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(m[0], 0);
  EXPECT_EQ(m[PageBytes()], 0);
  EXPECT_EQ(m[2 * PageBytes()], 0);
}

TEST(TransactionTest, NestedCommitHandsUndoToTheParent) {
  Region r(4 * PageBytes());
  char* m = r.bytes();
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 'a';
  ASSERT_EQ(rvm_commit(), 0);

  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 'b';
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 'c';
  m[PageBytes()] = 'd';
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(m[0], 'c');
  EXPECT_EQ(m[PageBytes()], 'd');
  EXPECT_EQ(Stats().pages_logged, 2u);
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(m[0], 'a') << "the parent's abort undoes what its committed child did";
  EXPECT_EQ(m[PageBytes()], 0);
}

TEST(TransactionTest, AbortRestoresPagesTheGrandparentWrote) {
  // Level 1 writes the page, level 2 does not, level 3 does and aborts: back in level 2 the page
  // must fault again, or level 2's own write would escape its abort.
  Region r(PageBytes());
  char* m = r.bytes();
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 1;
  ASSERT_EQ(rvm_begin(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 3;
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(m[0], 1);
  EXPECT_FALSE(PageWritable(m));
  m[0] = 2;
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(m[0], 1);
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(m[0], 0);
}

TEST(TransactionTest, DeepNestingUnwindsLevelByLevel) {
  Region r(2 * PageBytes());
  auto* v = reinterpret_cast<int*>(r.bytes());
  constexpr int kLevels = 200;
  for (int i = 1; i <= kLevels; ++i) {
    ASSERT_EQ(rvm_begin(), 0);
    v[0] = i;
    if (i % 3 == 0) v[PageBytes() / sizeof(int)] = i;
  }
  EXPECT_EQ(rvm_depth(), kLevels);
  for (int i = kLevels; i >= 1; --i) {
    ASSERT_EQ(v[0], i);
    ASSERT_EQ(v[PageBytes() / sizeof(int)], i / 3 * 3);
    ASSERT_EQ(rvm_abort(), 0);
  }
  EXPECT_EQ(v[0], 0);
}

TEST(TransactionTest, AbortToUnwindsSeveralLevels) {
  Region r(PageBytes());
  char* m = r.bytes();
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 1;
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 2;
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 3;
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 4;
  EXPECT_EQ(rvm_abort_to(5), EINVAL);
  ASSERT_EQ(rvm_abort_to(2), 0);
  EXPECT_EQ(rvm_depth(), 2);
  EXPECT_EQ(m[0], 2);
  ASSERT_EQ(rvm_abort_to(0), 0);
  EXPECT_EQ(m[0], 0);
}

TEST(TransactionTest, SetRangeLetsTheKernelWriteIntoARegion) {
  Region r(4 * PageBytes());
  char* m = r.bytes();
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(write(p[1], "hello", 5), 5);
  ASSERT_EQ(rvm_begin(), 0);
  // The kernel does not fault on a protected page: the call fails.
  EXPECT_EQ(read(p[0], m + PageBytes() - 2, 5), -1);
  EXPECT_EQ(errno, EFAULT);
  ASSERT_EQ(rvm_set_range(m + PageBytes() - 2, 5), 0);
  EXPECT_EQ(read(p[0], m + PageBytes() - 2, 5), 5);
  EXPECT_EQ(std::string(m + PageBytes() - 2, 5), "hello");
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(std::string(m + PageBytes() - 2, 5), std::string(5, '\0'));
  close(p[0]);
  close(p[1]);
}

TEST(TransactionTest, SetRangeChecksItsArguments) {
  Region r(2 * PageBytes());
  char outside[16];
  EXPECT_EQ(rvm_set_range(r.bytes(), 1), EPERM);
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(rvm_set_range(outside, sizeof outside), EINVAL);
  EXPECT_EQ(rvm_set_range(r.bytes() + PageBytes(), PageBytes() + 1), EINVAL);
  EXPECT_EQ(rvm_set_range(r.bytes(), 0), 0);
  EXPECT_EQ(rvm_set_range(r.bytes(), 2 * PageBytes()), 0);
  EXPECT_EQ(Stats().pages_logged, 2u);
  ASSERT_EQ(rvm_commit(), 0);
}

TEST(TransactionTest, UnmapWaitsForTheTransaction) {
  rvm_region* r = nullptr;
  ASSERT_EQ(rvm_map(PageBytes(), 0, &r), 0);
  ASSERT_EQ(rvm_begin(), 0);
  static_cast<char*>(rvm_base(r))[0] = 1;
  EXPECT_EQ(rvm_unmap(r), EBUSY);
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(rvm_unmap(r), 0);
}

TEST(TransactionDeathTest, WriteOutsideATransactionIsRefused) {
  Region r(PageBytes());
  char* m = r.bytes();
  ASSERT_EQ(rvm_begin(), 0);
  m[0] = 1;
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_DEATH(*static_cast<volatile char*>(m) = 2,
               "rvm: write to a recoverable region outside a transaction");
  EXPECT_EQ(m[0], 1);
}

}  // namespace
}  // namespace amino::rvm::testing
