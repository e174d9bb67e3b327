// Checkpoints asked of a store's Checkpointer (checkpointer.h): taken, by its thread where
// there is a CPU for one and on the spot otherwise, and none left running when it goes.
#include "schema/checkpointer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fs_test.h"

namespace amino::schema::testing {
namespace {

class CheckpointerTest : public FsTest {
 protected:
  DB_LSN LastCheckpoint() {
    DB_ENV* env = fs_->store().env();
    DB_TXN_STAT* st = nullptr;
    EXPECT_EQ(env->txn_stat(env, &st, 0), 0);
    const DB_LSN lsn = st ? st->st_last_ckp : DB_LSN{};
    free(st);
    return lsn;
  }
  // Some log past the last checkpoint: a checkpoint then moves it.
  void WriteSomething(const std::string& name) {
    ASSERT_TRUE(root().WriteFile(name, std::string(10000, 'x')).ok());
  }
};

bool Before(const DB_LSN& a, const DB_LSN& b) {
  return a.file < b.file || (a.file == b.file && a.offset < b.offset);
}

TEST_F(CheckpointerTest, ACheckpointAskedIsTaken) {
  WriteSomething("/a");
  const DB_LSN before = LastCheckpoint();
  Checkpointer c(fs_->store().env(), 0);
  c.Ask();
  // On the spot without a thread; else within moments.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!Before(before, LastCheckpoint()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(Before(before, LastCheckpoint()));
  if (Checkpointer::Worthwhile()) {
    EXPECT_EQ(c.taken(), 1u);
  }
}

TEST_F(CheckpointerTest, OnlyOnceEnoughLogWasWritten) {
  WriteSomething("/a");
  const DB_LSN before = LastCheckpoint();
  {
    Checkpointer big(fs_->store().env(), 64 * 1024);  // 64 MiB: far more than was written
    big.Ask();
  }  // its thread, if any, was joined: whatever it was to do is done
  EXPECT_FALSE(Before(before, LastCheckpoint()));
}

TEST_F(CheckpointerTest, GoingAwayWhileAskedLeavesNothingRunning) {
  for (int i = 0; i < 20; ++i) {
    WriteSomething("/f" + std::to_string(i));
    Checkpointer c(fs_->store().env(), 0);
    c.Ask();
  }
  // Every thread was joined: the store closes (and the fixture's fsck runs) with none left.
  Reopen();
  EXPECT_TRUE(root().ReadFile("/f19").ok());
}

}  // namespace
}  // namespace amino::schema::testing
