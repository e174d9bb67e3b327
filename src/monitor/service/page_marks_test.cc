// The marks a shared mapping's write-back keeps of a mapping file's pages.
#include "monitor/service/page_marks.h"

#include <gtest/gtest.h>

namespace amino::monitor::service {
namespace {

TEST(PageMarksTest, AMarkIsKeptUntilItsPageIsForgotten) {
  PageMarks m;
  EXPECT_EQ(m.Get(5), 0u);
  m.Set(5, 11);
  m.Set(40, 12);  // another run
  EXPECT_EQ(m.Get(5), 11u);
  EXPECT_EQ(m.Get(40), 12u);
  EXPECT_EQ(m.Get(6), 0u);  // a neighbour in the same run is still unknown
  m.Forget(0, 6);
  EXPECT_EQ(m.Get(5), 0u);
  EXPECT_EQ(m.Get(40), 12u);
  m.Clear();
  EXPECT_EQ(m.Get(40), 0u);
  EXPECT_TRUE(m.empty());
}

TEST(PageMarksTest, ForgettingARangeSpanningRunsLeavesThePagesAroundIt) {
  PageMarks m;
  for (uint64_t i = 0; i < 64; ++i) m.Set(i, 100 + i);
  m.Forget(10, 50);
  for (uint64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(m.Get(i), (i >= 10 && i < 50) ? 0u : 100 + i) << i;
  }
  m.Forget(0, UINT64_MAX);  // to the end of any file
  EXPECT_TRUE(m.empty());
}

TEST(PageMarksTest, AllKnownNeedsEveryPageOfTheRange) {
  PageMarks m;
  EXPECT_TRUE(m.AllKnown(3, 3));  // an empty range
  for (uint64_t i = 8; i < 40; ++i) m.Set(i, 1 + i);
  EXPECT_TRUE(m.AllKnown(8, 40));
  EXPECT_TRUE(m.AllKnown(15, 17));  // across a run's end
  EXPECT_FALSE(m.AllKnown(7, 40));
  EXPECT_FALSE(m.AllKnown(8, 41));
  m.Forget(20, 21);
  EXPECT_FALSE(m.AllKnown(8, 40));
  EXPECT_TRUE(m.AllKnown(21, 40));
}

TEST(PageMarksTest, AFileWrittenFarOutKeepsOnlyWhatItTouched) {
  PageMarks m;
  const uint64_t far = 1ull << 40;  // a page index four petabytes out
  m.Set(far, 7);
  EXPECT_EQ(m.Get(far), 7u);
  EXPECT_FALSE(m.AllKnown(far - 1, far + 1));
  m.Forget(far, far + 1);
  EXPECT_TRUE(m.empty());
}

}  // namespace
}  // namespace amino::monitor::service
