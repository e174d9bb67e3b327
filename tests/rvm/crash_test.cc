// Crash test for persistent regions: a child moves value between the cells of a persistent region
// in nested transactions and is killed with SIGKILL at a random moment; the parent reopens the
// store (recovery runs) and requires the last committed state: the total of all cells exact, the
// generation counter at the last commit the child reported (or the one after it, which may have
// completed just before the kill), no cell newer than the counter. A histogram shows that work
// was done, so "nothing committed" cannot pass.
//
//   RVM_CRASH_ITERS  kills in the main test (default 12)
//   RVM_CRASH_SEED   seed of the kill times and of the workload (default 1)
//
// The negative control breaks commit on purpose (each page in a Berkeley DB transaction of its
// own) and requires the checker to notice within a bounded number of kills.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include "amino/rvm.h"
#include "rvm/testing.h"
#include "rvm_test_util.h"

namespace amino::rvm::testing {
namespace {

constexpr size_t kCells = 2048;  // one page each, after the header page
constexpr int64_t kInitialValue = 1000;

struct HeaderPage {
  uint64_t generation;  // 0: never initialised; 1: initialised; then one per commit
};
struct Cell {
  int64_t value;
  uint64_t generation;  // the commit that last changed the cell
};

HeaderPage* Header(rvm_region* r) { return static_cast<HeaderPage*>(rvm_base(r)); }
Cell* CellAt(rvm_region* r, size_t i) {
  return reinterpret_cast<Cell*>(static_cast<char*>(rvm_base(r)) + (i + 1) * PageBytes());
}

// The child: initialises the cells if needed, reports 0 when ready, then commits transfers and
// reports each generation it committed. Never returns normally.
int RunWorkload(const std::string& dir, uint64_t seed, int report_fd, bool broken) {
  rvm_store* store = nullptr;
  rvm_region* r = nullptr;
  if (rvm_store_open(dir.c_str(), 0, &store) != 0) return 3;
  if (rvm_open(store, "cells", (kCells + 1) * PageBytes() + (size_t{1} << 30), RVM_CREATE, &r) !=
      0) {
    return 4;
  }
  if (Header(r)->generation == 0) {
    rvm_begin();
    for (size_t i = 0; i < kCells; ++i) *CellAt(r, i) = Cell{kInitialValue, 1};
    Header(r)->generation = 1;
    if (rvm_commit() != 0) return 5;
  }
  uint64_t ready = 0;
  if (write(report_fd, &ready, sizeof ready) != sizeof ready) return 6;
  // Broken commits from here on, one of which crashes itself part-way (after 2 to 60 page
  // commits), so that the negative control does not depend on where a kill from outside lands.
  if (broken) SetSplitCommitForTesting(true, 2 + static_cast<unsigned>(seed % 59));
  std::mt19937_64 rng(seed);
  for (;;) {
    uint64_t g = Header(r)->generation + 1;
    rvm_begin();
    int moves = 8 + static_cast<int>(rng() % 24);
    for (int m = 0; m < moves; ++m) {
      // Some moves happen in a nested transaction that aborts: they must leave no trace.
      bool doomed = rng() % 4 == 0;
      if (doomed) rvm_begin();
      Cell* from = CellAt(r, rng() % kCells);
      Cell* to = CellAt(r, rng() % kCells);
      int64_t amount = static_cast<int64_t>(rng() % 100);
      from->value -= amount;
      from->generation = doomed ? g + 1000 : g;
      to->value += amount;
      to->generation = doomed ? g + 1000 : g;
      if (doomed) rvm_abort();
    }
    Header(r)->generation = g;
    if (rvm_commit() != 0) return 7;
    if (write(report_fd, &g, sizeof g) != sizeof g) return 8;
  }
}

struct Kill {
  bool ready = false;
  bool killed = false;
  int exit_code = -1;
  uint64_t last_reported = 0;  // 0: no commit reported
};

Kill RunAndKill(const std::string& dir, uint64_t seed, int run_ms, bool broken) {
  Kill k;
  int fds[2];
  if (pipe(fds) != 0) return k;
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    _exit(RunWorkload(dir, seed, fds[1], broken));
  }
  close(fds[1]);
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::seconds(30);  // until ready
  for (;;) {
    auto now = Clock::now();
    if (now >= deadline) break;
    int wait = static_cast<int>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) +
               1;
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, wait) <= 0) continue;
    uint64_t g;
    if (read(fds[0], &g, sizeof g) != sizeof g) break;  // the child died by itself
    if (g == 0) {
      k.ready = true;
      deadline = Clock::now() + std::chrono::milliseconds(run_ms);
    } else {
      k.last_reported = g;
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  uint64_t g;
  while (read(fds[0], &g, sizeof g) == sizeof g) {
    if (g != 0) k.last_reported = g;
  }
  close(fds[0]);
  k.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (WIFEXITED(status)) k.exit_code = WEXITSTATUS(status);
  return k;
}

struct State {
  std::string problem;  // "" when consistent
  uint64_t generation = 0;
  std::map<int64_t, int> histogram;  // cell values in buckets of 250
};

// Opens the store (running recovery) and checks the region against the invariant. `floor` is
// the newest generation known to be committed (reported by the child, or found by the previous
// check); one more may have committed before the kill without being reported (two the first
// time: initialisation and one transfer).
State Check(const std::string& dir, uint64_t floor) {
  State s;
  rvm_store* store = nullptr;
  rvm_region* r = nullptr;
  if (int err = rvm_store_open(dir.c_str(), 0, &store)) {
    s.problem = "cannot open the store: " + std::string(strerror(err));
    return s;
  }
  if (int err = rvm_open(store, "cells", 0, 0, &r)) {
    s.problem = "cannot open the region: " + std::string(strerror(err));
    rvm_store_close(store);
    return s;
  }
  s.generation = Header(r)->generation;
  int64_t total = 0;
  uint64_t newest = 0;
  for (size_t i = 0; i < kCells; ++i) {
    Cell c = *CellAt(r, i);
    total += c.value;
    newest = std::max(newest, c.generation);
    s.histogram[c.value >= 0 ? c.value / 250 * 250 : -(-c.value + 249) / 250 * 250]++;
  }
  if (s.generation == 0) {
    if (total != 0 || newest != 0) s.problem = "cells changed but never initialised";
  } else if (total != static_cast<int64_t>(kCells) * kInitialValue) {
    s.problem = "total is " + std::to_string(total);
  } else if (newest > s.generation) {
    s.problem = "a cell of generation " + std::to_string(newest) + " beyond the counter " +
                std::to_string(s.generation);
  } else if (s.generation < floor || s.generation > std::max<uint64_t>(floor, 1) + 1) {
    s.problem = "generation " + std::to_string(s.generation) + " where " + std::to_string(floor) +
                " was known committed";
  }
  rvm_unmap(r);
  rvm_store_close(store);
  return s;
}

TEST(CrashTest, RegionReopensInItsLastCommittedState) {
  const uint64_t iterations = EnvNumber("RVM_CRASH_ITERS", 12);
  const uint64_t seed = EnvNumber("RVM_CRASH_SEED", 1);
  std::mt19937_64 rng(seed);
  TempDir dir;
  const std::string path = dir.path() + "/store";
  uint64_t generation = 0;
  int kills_with_commits = 0;
  State last;
  for (uint64_t i = 0; i < iterations; ++i) {
    int run_ms = 10 + static_cast<int>(rng() % 150);
    Kill k = RunAndKill(path, rng(), run_ms, false);
    ASSERT_TRUE(k.ready) << "iteration " << i << ": the child never opened the region (exit "
                         << k.exit_code << ")";
    ASSERT_TRUE(k.killed) << "iteration " << i << ": the child exited with " << k.exit_code;
    last = Check(path, std::max(k.last_reported, generation));
    ASSERT_EQ(last.problem, "") << "seed " << seed << ", iteration " << i << ", killed after "
                                << run_ms << " ms";
    std::cout << "iteration " << i << ": killed after " << run_ms << " ms, generation "
              << last.generation << " (" << last.generation - generation << " commits)\n";
    kills_with_commits += last.generation > generation;
    generation = last.generation;
  }
  std::cout << "cell values after " << generation << " generations:\n";
  int moved = 0;
  for (const auto& [bucket, count] : last.histogram) {
    std::cout << "  " << bucket << ".." << bucket + 249 << ": " << count << "\n";
    if (bucket != kInitialValue / 250 * 250) moved += count;
  }
  EXPECT_GE(generation, iterations * 10) << "too few commits to mean anything";
  EXPECT_GE(kills_with_commits, static_cast<int>(iterations / 2));
  EXPECT_GT(moved, 0) << "no cell's value ever left its initial bucket";
}

TEST(CrashTest, NegativeControlSplitCommitsAreCaught) {
  std::mt19937_64 rng(EnvNumber("RVM_CRASH_SEED", 1) + 1);
  TempDir dir;
  const std::string path = dir.path() + "/store";
  constexpr int kMaxKills = 30;
  int kills = 0;
  uint64_t generation = 0;
  std::string caught;
  while (kills < kMaxKills && caught.empty()) {
    Kill k = RunAndKill(path, rng(), 20 + static_cast<int>(rng() % 100), true);
    ASSERT_TRUE(k.ready && k.killed) << "exit " << k.exit_code;
    ++kills;
    State st = Check(path, std::max(k.last_reported, generation));
    caught = st.problem;
    generation = st.generation;
  }
  std::cout << "broken commits caught after " << kills << " kills: " << caught << "\n";
  EXPECT_NE(caught, "") << "the checker never noticed half-committed transactions";
}

}  // namespace
}  // namespace amino::rvm::testing
