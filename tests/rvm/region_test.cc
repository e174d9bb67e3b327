// Volatile regions: mapping, unmapping, argument checks, and regions of many GiB of address space
// of which only a few pages are touched.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "amino/rvm.h"
#include "rvm_test_util.h"

namespace amino::rvm::testing {
namespace {

TEST(RegionTest, MapGivesAZeroFilledReadOnlyRegion) {
  rvm_region* r = nullptr;
  ASSERT_EQ(rvm_map(3 * PageBytes() + 1, 0, &r), 0);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(rvm_size(r), 4 * PageBytes()) << "rounded up to whole pages";
  EXPECT_EQ(rvm_is_persistent(r), 0);
  auto* m = static_cast<const char*>(rvm_base(r));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m) % PageBytes(), 0u);
  for (size_t i = 0; i < rvm_size(r); ++i) ASSERT_EQ(m[i], 0) << i;
  EXPECT_EQ(WritableBytes(r), 0u);
  EXPECT_EQ(rvm_unmap(r), 0);
}

TEST(RegionTest, MapChecksItsArguments) {
  rvm_region* r = nullptr;
  EXPECT_EQ(rvm_map(0, 0, &r), EINVAL);
  EXPECT_EQ(rvm_map(PageBytes(), 1, &r), EINVAL);
  EXPECT_EQ(rvm_map(PageBytes(), 0, nullptr), EINVAL);
  EXPECT_EQ(rvm_map(SIZE_MAX, 0, &r), ENOMEM);
  EXPECT_EQ(rvm_map(size_t{1} << 62, 0, &r), ENOMEM) << "more than the address space";
  EXPECT_EQ(rvm_unmap(nullptr), EINVAL);
}

TEST(RegionTest, UnmapReturnsTheAddressRange) {
  rvm_region* r = nullptr;
  ASSERT_EQ(rvm_map(4 * PageBytes(), 0, &r), 0);
  auto base = reinterpret_cast<uintptr_t>(rvm_base(r));
  ASSERT_EQ(rvm_unmap(r), 0);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uintptr_t lo = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    uintptr_t hi = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    EXPECT_FALSE(lo <= base && base < hi) << line;
  }
}

TEST(RegionTest, ManyRegionsInOneTransaction) {
  std::vector<rvm_region*> regions(64);
  for (auto*& r : regions) ASSERT_EQ(rvm_map(2 * PageBytes(), 0, &r), 0);
  ASSERT_EQ(rvm_begin(), 0);
  for (size_t i = 0; i < regions.size(); ++i) static_cast<int*>(rvm_base(regions[i]))[1] = 7;
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  for (size_t i = 0; i < regions.size(); ++i) static_cast<int*>(rvm_base(regions[i]))[1] = 9;
  ASSERT_EQ(rvm_abort(), 0);
  for (auto* r : regions) {
    EXPECT_EQ(static_cast<int*>(rvm_base(r))[1], 7);
    EXPECT_EQ(rvm_unmap(r), 0);
  }
}

// 64 GiB of address space, a page written every 640 MiB: neither the mapping nor the
// transaction's bookkeeping may cost memory in proportion to the region.
TEST(RegionTest, SparseRegionOfManyGiBCostsOnlyTheTouchedPages) {
  const size_t size = size_t{64} << 30;
  const size_t before = ResidentBytes();
  rvm_region* r = nullptr;
  ASSERT_EQ(rvm_map(size, 0, &r), 0);
  char* m = static_cast<char*>(rvm_base(r));
  std::vector<size_t> offsets;
  for (size_t i = 0; i < 100; ++i) offsets.push_back(i * (size / 100) + 5);
  // Reading is free too (the zero page).
  for (size_t off : offsets) ASSERT_EQ(m[off], 0);
  ASSERT_EQ(rvm_begin(), 0);
  for (size_t off : offsets) m[off] = 'w';
  rvm_stats s;
  rvm_thread_stats(&s);
  EXPECT_EQ(s.pages_logged, 100u);
  ASSERT_EQ(rvm_commit(), 0);
  ASSERT_EQ(rvm_begin(), 0);
  for (size_t off : offsets) m[off] = 'x';
  m[size - 1] = 'z';
  ASSERT_EQ(rvm_abort(), 0);
  for (size_t off : offsets) ASSERT_EQ(m[off], 'w');
  EXPECT_EQ(m[size - 1], 0);
  const size_t grown = ResidentBytes() - before;
  // 101 region pages, 101 before-images and some bookkeeping: well under 16 MiB.
  EXPECT_LT(grown, size_t{16} << 20) << "resident memory grew by " << grown << " bytes";
  EXPECT_EQ(rvm_unmap(r), 0);
}

}  // namespace
}  // namespace amino::rvm::testing
