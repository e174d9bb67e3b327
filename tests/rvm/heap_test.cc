// rvm_alloc / rvm_free / the root slot: correctness of the allocator, and that allocations and
// frees roll back with the transaction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "amino/rvm.h"
#include "rvm_test_util.h"

namespace amino::rvm::testing {
namespace {

TEST(HeapTest, NeedsATransactionOfTheCaller) {
  Region r(16 * PageBytes());
  errno = 0;
  EXPECT_EQ(rvm_alloc(r.get(), 10), nullptr);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(rvm_set_root(r.get(), nullptr), EPERM);
  EXPECT_EQ(rvm_free(r.get(), nullptr), 0) << "freeing NULL is a no-op";
  ASSERT_EQ(rvm_begin(), 0);
  void* p = rvm_alloc(r.get(), 10);
  ASSERT_EQ(rvm_commit(), 0);
  EXPECT_EQ(rvm_free(r.get(), p), EPERM);
}

TEST(HeapTest, BlocksAreAlignedDisjointAndInsideTheRegion) {
  Region r(64 * PageBytes());
  ASSERT_EQ(rvm_begin(), 0);
  std::vector<std::pair<char*, size_t>> blocks;
  for (size_t size : {1, 15, 16, 17, 100, 1000, 1024, 5000, 3, 64 * 1024}) {
    auto* p = static_cast<char*>(rvm_alloc(r.get(), size));
    ASSERT_NE(p, nullptr) << size;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    EXPECT_GE(p, r.bytes());
    EXPECT_LE(p + size, r.bytes() + r.size());
    std::memset(p, static_cast<int>(size & 0xff), size);
    blocks.emplace_back(p, size);
  }
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_LE(blocks[i - 1].first + blocks[i - 1].second, blocks[i].first);
  }
  for (auto& [p, size] : blocks) {
    for (size_t k = 0; k < size; ++k) ASSERT_EQ(p[k], static_cast<char>(size & 0xff));
  }
  ASSERT_EQ(rvm_commit(), 0);
}

TEST(HeapTest, AbortRollsBackAnAllocation) {
  Region r(16 * PageBytes());
  ASSERT_EQ(rvm_begin(), 0);
  void* kept = rvm_alloc(r.get(), 40);
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  void* p = rvm_alloc(r.get(), 100);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(rvm_abort(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_EQ(rvm_alloc(r.get(), 100), p) << "the allocator is back where it was";
  EXPECT_EQ(rvm_free(r.get(), kept), 0);
  ASSERT_EQ(rvm_commit(), 0);
}

TEST(HeapTest, AbortRollsBackAFree) {
  Region r(16 * PageBytes());
  ASSERT_EQ(rvm_begin(), 0);
  auto* p = static_cast<char*>(rvm_alloc(r.get(), 64));
  std::strcpy(p, "still here");
  ASSERT_EQ(rvm_commit(), 0);

  ASSERT_EQ(rvm_begin(), 0);
  ASSERT_EQ(rvm_free(r.get(), p), 0);
  void* reuse = rvm_alloc(r.get(), 64);
  EXPECT_EQ(reuse, p) << "a freed block is reused";
  std::strcpy(static_cast<char*>(reuse), "overwritten");
  ASSERT_EQ(rvm_abort(), 0);

  EXPECT_STREQ(p, "still here");
  ASSERT_EQ(rvm_begin(), 0);
  EXPECT_NE(rvm_alloc(r.get(), 64), p) << "the block is allocated again after the abort";
  EXPECT_EQ(rvm_free(r.get(), p), 0) << "and can be freed exactly once";
  EXPECT_EQ(rvm_free(r.get(), p), EINVAL);
  ASSERT_EQ(rvm_commit(), 0);
}

TEST(HeapTest, NestedAbortRollsBackOnlyTheChildsAllocations) {
  Region r(16 * PageBytes());
  ASSERT_EQ(rvm_begin(), 0);
  void* a = rvm_alloc(r.get(), 200);
  ASSERT_EQ(rvm_begin(), 0);
  void* b = rvm_alloc(r.get(), 200);
  ASSERT_EQ(rvm_free(r.get(), a), 0);
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(rvm_free(r.get(), a), 0) << "a is allocated again";
  EXPECT_EQ(rvm_alloc(r.get(), 200), a);
  EXPECT_EQ(rvm_alloc(r.get(), 200), b) << "b's allocation was undone";
  ASSERT_EQ(rvm_commit(), 0);
}

TEST(HeapTest, BadFreesAreRefused) {
  Region r(16 * PageBytes());
  char stack[32];
  ASSERT_EQ(rvm_begin(), 0);
  auto* p = static_cast<char*>(rvm_alloc(r.get(), 100));
  EXPECT_EQ(rvm_free(r.get(), stack), EINVAL);
  EXPECT_EQ(rvm_free(r.get(), p + 16), EINVAL);
  EXPECT_EQ(rvm_free(r.get(), p + 1), EINVAL);
  EXPECT_EQ(rvm_free(r.get(), r.bytes() + r.size() - 16), EINVAL);
  EXPECT_EQ(rvm_free(r.get(), p), 0);
  EXPECT_EQ(rvm_free(r.get(), p), EINVAL) << "double free";
  ASSERT_EQ(rvm_commit(), 0);
}

TEST(HeapTest, FullRegionAndCoalescing) {
  Region r(16 * PageBytes());
  ASSERT_EQ(rvm_begin(), 0);
  errno = 0;
  EXPECT_EQ(rvm_alloc(r.get(), r.size()), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  std::vector<void*> blocks;
  while (void* p = rvm_alloc(r.get(), 1000)) blocks.push_back(p);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_GT(blocks.size(), 50u);
  // Free every other block, then the rest: the freed neighbours must merge back into space big
  // enough for one block of nearly the whole region.
  for (size_t i = 0; i < blocks.size(); i += 2) ASSERT_EQ(rvm_free(r.get(), blocks[i]), 0);
  EXPECT_EQ(rvm_alloc(r.get(), 5000), nullptr) << "fragmented: no 5000-byte hole yet";
  for (size_t i = 1; i < blocks.size(); i += 2) ASSERT_EQ(rvm_free(r.get(), blocks[i]), 0);
  void* big = rvm_alloc(r.get(), r.size() - 4 * PageBytes());
  EXPECT_NE(big, nullptr);
  ASSERT_EQ(rvm_commit(), 0);
}

TEST(HeapTest, RootIsAnOffsetThatRollsBack) {
  Region r(16 * PageBytes());
  EXPECT_EQ(rvm_get_root(r.get()), nullptr);
  ASSERT_EQ(rvm_begin(), 0);
  void* p = rvm_alloc(r.get(), 32);
  char outside;
  EXPECT_EQ(rvm_set_root(r.get(), &outside), EINVAL);
  ASSERT_EQ(rvm_set_root(r.get(), p), 0);
  EXPECT_EQ(rvm_get_root(r.get()), p);
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  ASSERT_EQ(rvm_set_root(r.get(), nullptr), 0);
  EXPECT_EQ(rvm_get_root(r.get()), nullptr);
  ASSERT_EQ(rvm_abort(), 0);
  EXPECT_EQ(rvm_get_root(r.get()), p);
}

// Random allocations and frees checked against a map of live blocks, each filled with its own
// byte: blocks never overlap, contents survive other operations, frees of live blocks succeed.
TEST(HeapTest, RandomAllocationsStayDisjointAndIntact) {
  Region r(1024 * PageBytes());
  std::mt19937_64 rng(EnvNumber("RVM_HEAP_SEED", 7));
  std::map<char*, std::pair<size_t, char>> live;
  ASSERT_EQ(rvm_begin(), 0);
  for (int op = 0; op < 20000; ++op) {
    if (live.empty() || rng() % 100 < 55) {
      size_t size = rng() % 4 == 0 ? 1 + rng() % 20000 : 1 + rng() % 300;
      auto* p = static_cast<char*>(rvm_alloc(r.get(), size));
      if (!p) {
        ASSERT_EQ(errno, ENOMEM);
        continue;
      }
      auto next = live.lower_bound(p);
      if (next != live.end()) {
        ASSERT_LE(p + size, next->first) << "overlaps the next block";
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.first, p) << "overlaps the previous block";
      }
      char fill = static_cast<char>(rng());
      std::memset(p, fill, size);
      live[p] = {size, fill};
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      auto [p, info] = *it;
      for (size_t k = 0; k < info.first; ++k) ASSERT_EQ(p[k], info.second);
      ASSERT_EQ(rvm_free(r.get(), p), 0);
      live.erase(it);
    }
    if (op % 1000 == 999) {  // keep the transaction's undo log from growing without bound
      ASSERT_EQ(rvm_commit(), 0);
      ASSERT_EQ(rvm_begin(), 0);
    }
  }
  for (auto& [p, info] : live) ASSERT_EQ(rvm_free(r.get(), p), 0);
  EXPECT_NE(rvm_alloc(r.get(), r.size() - 2 * PageBytes()), nullptr)
      << "everything freed merges back into one free area";
  ASSERT_EQ(rvm_commit(), 0);
}

}  // namespace
}  // namespace amino::rvm::testing
