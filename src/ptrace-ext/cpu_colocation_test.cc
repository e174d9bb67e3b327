#include "ptrace-ext/cpu_colocation.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace amino::ptrace_ext {
namespace {

cpu_set_t CpusOf(pid_t tid) {
  cpu_set_t s;
  CPU_ZERO(&s);
  EXPECT_EQ(sched_getaffinity(tid, sizeof s, &s), 0);
  return s;
}

cpu_set_t Only(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return s;
}

// A thread that waits until told to end, as a caller waits inside its call.
class WaitingThread {
 public:
  WaitingThread()
      : thread_([this] {
          tid_ = static_cast<pid_t>(syscall(SYS_gettid));
          while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }) {
    while (tid_ == 0) std::this_thread::yield();
  }
  ~WaitingThread() {
    stop_ = true;
    thread_.join();
  }
  pid_t tid() const { return tid_; }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class CpuColocationTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!CpuColocation::Worthwhile()) GTEST_SKIP() << "this process may use one CPU only";
    all_ = CpusOf(0);
  }
  cpu_set_t all_;
};

TEST_F(CpuColocationTest, PinsBothToTheMonitorsCpuAndGivesTheirCpusBack) {
  WaitingThread caller;
  {
    CpuColocation together(caller.tid());
    ASSERT_TRUE(together.pinned());
    const cpu_set_t here = CpusOf(0);
    ASSERT_EQ(CPU_COUNT(&here), 1);
    const cpu_set_t theirs = CpusOf(caller.tid());
    EXPECT_TRUE(CPU_EQUAL(&here, &theirs));
    EXPECT_TRUE(CPU_ISSET(sched_getcpu(), &here));
  }
  const cpu_set_t mine = CpusOf(0), theirs = CpusOf(caller.tid());
  EXPECT_TRUE(CPU_EQUAL(&mine, &all_));
  EXPECT_TRUE(CPU_EQUAL(&theirs, &all_));
}

TEST_F(CpuColocationTest, LeavesAThreadPinnedElsewhereAlone) {
  WaitingThread caller;
  const int cpu = sched_getcpu();
  int other = -1;
  for (int c = 0; c < CPU_SETSIZE && other < 0; ++c) {
    if (c != cpu && CPU_ISSET(c, &all_)) other = c;
  }
  ASSERT_GE(other, 0);
  // The monitor stays where it is for the test: on `cpu`, which the caller may not use.
  cpu_set_t stay = Only(cpu), there = Only(other);
  ASSERT_EQ(sched_setaffinity(0, sizeof stay, &stay), 0);
  ASSERT_EQ(sched_setaffinity(caller.tid(), sizeof there, &there), 0);
  {
    CpuColocation together(caller.tid());
    EXPECT_FALSE(together.pinned());
    const cpu_set_t theirs = CpusOf(caller.tid());
    EXPECT_TRUE(CPU_EQUAL(&theirs, &there));
  }
  const cpu_set_t theirs = CpusOf(caller.tid()), mine = CpusOf(0);
  EXPECT_TRUE(CPU_EQUAL(&theirs, &there));
  EXPECT_TRUE(CPU_EQUAL(&mine, &stay));
  ASSERT_EQ(sched_setaffinity(0, sizeof all_, &all_), 0);
}

TEST_F(CpuColocationTest, AGoneThreadChangesNothing) {
  pid_t gone = 0;
  std::thread([&] { gone = static_cast<pid_t>(syscall(SYS_gettid)); }).join();
  CpuColocation together(gone);
  EXPECT_FALSE(together.pinned());
  const cpu_set_t mine = CpusOf(0);
  EXPECT_TRUE(CPU_EQUAL(&mine, &all_));
}

}  // namespace
}  // namespace amino::ptrace_ext
