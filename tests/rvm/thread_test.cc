// The thread model: transactions are per thread, and a region belongs to one thread's
// transaction at a time.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "amino/rvm.h"
#include "rvm_test_util.h"

namespace amino::rvm::testing {
namespace {

TEST(ThreadTest, TransactionsArePerThread) {
  Region a(PageBytes()), b(PageBytes());
  ASSERT_EQ(rvm_begin(), 0);
  a.bytes()[0] = 'A';
  std::thread other([&] {
    EXPECT_EQ(rvm_depth(), 0) << "the main thread's transaction is not this thread's";
    EXPECT_EQ(rvm_commit(), EINVAL);
    ASSERT_EQ(rvm_begin(), 0);
    ASSERT_EQ(rvm_begin(), 0);
    b.bytes()[0] = 'B';
    EXPECT_EQ(rvm_commit(), 0);
    EXPECT_EQ(rvm_commit(), 0);
  });
  other.join();
  EXPECT_EQ(rvm_depth(), 1);
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(a.bytes()[0], 0) << "the main thread's abort";
  EXPECT_EQ(b.bytes()[0], 'B') << "does not touch the other thread's committed work";
}

TEST(ThreadTest, ARegionBelongsToOneTransactionAtATime) {
  Region r(4 * PageBytes());
  char* raw = r.bytes() + 3 * PageBytes();  // clear of the allocator's header at offset 0
  ASSERT_EQ(rvm_begin(), 0);
  raw[0] = 1;  // the main thread's transaction now holds the region
  std::thread other([&] {
    ASSERT_EQ(rvm_begin(), 0);
    errno = 0;
    EXPECT_EQ(rvm_alloc(r.get(), 16), nullptr);
    EXPECT_EQ(errno, EBUSY);
    EXPECT_EQ(rvm_set_root(r.get(), nullptr), EBUSY);
    EXPECT_EQ(rvm_set_range(raw + 1, 1), EBUSY);
    EXPECT_EQ(rvm_commit(), 0);
  });
  other.join();
  EXPECT_EQ(rvm_unmap(r.get()), EBUSY);
  ASSERT_EQ(rvm_commit(), 0);
  // Released by the top-level commit: another thread may take it now.
  std::thread next([&] {
    ASSERT_EQ(rvm_begin(), 0);
    raw[1] = 2;
    EXPECT_NE(rvm_alloc(r.get(), 16), nullptr);
    EXPECT_EQ(rvm_abort(), 0);
  });
  next.join();
  EXPECT_EQ(raw[0], 1);
  EXPECT_EQ(raw[1], 0);
  EXPECT_EQ(rvm_get_root(r.get()), nullptr);
}

TEST(ThreadDeathTest, AFirstWriteToAnotherThreadsRegionIsRefused) {
  Region r(4 * PageBytes());
  EXPECT_DEATH(
      {
        rvm_begin();
        r.bytes()[0] = 1;
        std::thread other([&] {
          rvm_begin();
          *static_cast<volatile char*>(r.bytes() + PageBytes()) = 2;
        });
        other.join();
      },
      "belongs to another thread's transaction");
}

TEST(ThreadTest, AThreadThatExitsInATransactionHasItAborted) {
  Region r(2 * PageBytes());
  std::thread t([&] {
    ASSERT_EQ(rvm_begin(), 0);
    r.bytes()[0] = 'x';
    ASSERT_EQ(rvm_begin(), 0);
    r.bytes()[PageBytes()] = 'y';
  });
  t.join();
  EXPECT_EQ(r.bytes()[0], 0);
  EXPECT_EQ(r.bytes()[PageBytes()], 0);
  EXPECT_EQ(WritableBytes(r.get()), 0u);
  ASSERT_EQ(rvm_begin(), 0);
  r.bytes()[0] = 'z';  // the region was released
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(r.bytes()[0], 'z');
}

// Threads with regions of their own run random nested transactions at the same time; each
// checks its region against its own copy after every step.
TEST(ThreadTest, ConcurrentTransactionsOnSeparateRegions) {
  constexpr int kThreads = 4;
  const size_t pages = 8;
  std::vector<std::unique_ptr<Region>> regions;
  for (int i = 0; i < kThreads; ++i)
    regions.push_back(std::make_unique<Region>(pages * PageBytes()));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      char* m = regions[t]->bytes();
      const size_t size = regions[t]->size();
      std::vector<std::vector<char>> saved;
      std::vector<char> shadow(size, 0);
      for (int step = 0; step < 3000; ++step) {
        int op = static_cast<int>(rng() % 10);
        if (op < 2 && saved.size() < 6) {
          if (rvm_begin() != 0) ++failures;
          saved.push_back(shadow);
        } else if (op < 3 && !saved.empty()) {
          if (rvm_commit() != 0) ++failures;
          saved.pop_back();
        } else if (op < 4 && !saved.empty()) {
          if (rvm_abort() != 0) ++failures;
          shadow = saved.back();
          saved.pop_back();
        } else if (!saved.empty()) {
          size_t off = rng() % size;
          char v = static_cast<char>(rng());
          m[off] = v;
          shadow[off] = v;
        }
        if (std::memcmp(m, shadow.data(), size) != 0) ++failures;
      }
      rvm_abort_to(0);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace amino::rvm::testing
