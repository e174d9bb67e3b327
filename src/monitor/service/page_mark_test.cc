// Page marks: the AVX2 and the portable code agree, and a mark tells pages apart.
#include "monitor/service/page_mark.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace amino::monitor::service {
namespace {

std::vector<char> RandomPages(size_t pages, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<char> v(pages * kMarkedPage);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

TEST(PageMarkTest, EveryCodeGivesTheSameMark) {
  const std::vector<char> bytes = RandomPages(64, 1);
  const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  for (size_t i = 0; i < 64; ++i) {
    const char* page = bytes.data() + i * kMarkedPage;
    EXPECT_EQ(PageMark(page), PageMarkSse2(page)) << i;
    if (avx2) {
      EXPECT_EQ(PageMarkAvx2(page), PageMarkSse2(page)) << i;
    }
  }
}

TEST(PageMarkTest, AMarkIsNeverZeroAndChangesWithAnyByte) {
  std::vector<char> page(kMarkedPage, 0);
  std::set<uint64_t> seen{PageMark(page.data())};
  EXPECT_NE(*seen.begin(), 0u);
  for (size_t at : {size_t{0}, size_t{1}, size_t{2047}, size_t{4095}}) {
    page[at] = 1;
    const uint64_t mark = PageMark(page.data());
    EXPECT_NE(mark, 0u);
    EXPECT_TRUE(seen.insert(mark).second) << "byte " << at;
    page[at] = 0;
  }
}

}  // namespace
}  // namespace amino::monitor::service
