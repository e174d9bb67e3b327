#include "monitor/parked_calls.h"

#include <gtest/gtest.h>

namespace amino::monitor {
namespace {

constexpr uint64_t kMs = 1'000'000;

ParkedCall Call(pid_t tid, bool lock_wait) {
  ParkedCall p;
  p.tid = tid;
  p.lock_wait = lock_wait;
  return p;
}

std::vector<pid_t> Tids(const std::vector<ParkedCall>& calls) {
  std::vector<pid_t> tids;
  for (const ParkedCall& p : calls) tids.push_back(p.tid);
  return tids;
}

TEST(ParkedCallsTest, ALockWaitIsNotTriedBeforeItsPauseEndsOrALockGoes) {
  ParkedCalls parked;
  EXPECT_EQ(parked.WaitNs(0, 0), -1);
  parked.Park(Call(1, true), 0, 7);
  EXPECT_EQ(parked.WaitNs(0, 7), static_cast<int64_t>(ParkedCalls::kPauseNs));
  // Calls served meanwhile change nothing for it.
  EXPECT_TRUE(parked.TakeReady(ParkedCalls::kPauseNs / 2, 7).empty());
  EXPECT_EQ(parked.size(), 1u);
}

TEST(ParkedCallsTest, OtherWaitsAreTriedWheneverTheTracerLooks) {
  ParkedCalls parked;
  parked.Park(Call(1, true), 0, 7);
  parked.Park(Call(2, false), 0, 7);
  EXPECT_EQ(parked.WaitNs(10, 7), static_cast<int64_t>(ParkedCalls::kPauseNs - 10));
  std::vector<ParkedCall> ready = parked.TakeReady(10, 7);
  EXPECT_EQ(Tids(ready), std::vector<pid_t>{2});
  EXPECT_TRUE(ready[0].due);
  parked.EndRetries();
}

TEST(ParkedCallsTest, AReleaseTriesLockWaitsAtOnce) {
  ParkedCalls parked;
  parked.Park(Call(1, true), 0, 7);
  EXPECT_EQ(parked.WaitNs(10, 8), 0);
  std::vector<ParkedCall> ready = parked.TakeReady(10, 8);
  EXPECT_EQ(Tids(ready), std::vector<pid_t>{1});
  EXPECT_FALSE(ready[0].due);  // tried for the release: no signal check owed
  parked.EndRetries();
  EXPECT_TRUE(parked.empty());
}

TEST(ParkedCallsTest, ALockWaitsPausesDoubleUpToTheirLimitWhileNothingIsReleased) {
  ParkedCalls parked;
  uint64_t now = 0;
  parked.Park(Call(1, true), now, 0);
  std::vector<uint64_t> pauses;
  for (int i = 0; i < 9; ++i) {
    const int64_t wait = parked.WaitNs(now, 0);
    pauses.push_back(static_cast<uint64_t>(wait));
    now += static_cast<uint64_t>(wait);
    std::vector<ParkedCall> ready = parked.TakeReady(now, 0);
    ASSERT_EQ(Tids(ready), std::vector<pid_t>{1});
    EXPECT_TRUE(ready[0].due);
    parked.Park(ready[0], now, 0);  // still held: parked again
    parked.EndRetries();
  }
  EXPECT_EQ(pauses[0], ParkedCalls::kPauseNs);
  EXPECT_EQ(pauses[1], 2 * ParkedCalls::kPauseNs);
  EXPECT_EQ(pauses[2], 4 * ParkedCalls::kPauseNs);
  EXPECT_EQ(pauses.back(), ParkedCalls::kMaxLockPauseNs);
  EXPECT_LE(ParkedCalls::kMaxLockPauseNs, 10 * kMs);
}

TEST(ParkedCallsTest, AWaitThatEndedStartsAfreshNextTime) {
  ParkedCalls parked;
  parked.Park(Call(1, true), 0, 0);
  uint64_t now = ParkedCalls::kPauseNs;
  std::vector<ParkedCall> ready = parked.TakeReady(now, 0);
  ASSERT_EQ(ready.size(), 1u);
  parked.EndRetries();  // the call went on
  parked.Park(Call(1, true), now, 0);
  EXPECT_EQ(parked.WaitNs(now, 0), static_cast<int64_t>(ParkedCalls::kPauseNs));
}

TEST(ParkedCallsTest, ACallTriedForAReleaseKeepsItsPause) {
  ParkedCalls parked;
  uint64_t now = 0;
  parked.Park(Call(1, true), now, 0);
  now += ParkedCalls::kPauseNs;
  std::vector<ParkedCall> ready = parked.TakeReady(now, 0);  // timed: the pause doubles
  parked.Park(ready[0], now, 0);
  parked.EndRetries();
  ready = parked.TakeReady(now + 1, 1);  // a release: tried, pause kept
  ASSERT_EQ(ready.size(), 1u);
  parked.Park(ready[0], now + 1, 1);
  parked.EndRetries();
  EXPECT_EQ(parked.WaitNs(now + 1, 1), static_cast<int64_t>(2 * ParkedCalls::kPauseNs));
}

}  // namespace
}  // namespace amino::monitor
