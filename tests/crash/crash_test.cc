// Crash test: a child process runs the invariant workload and is killed with SIGKILL at a random
// moment; the parent reopens the file system (recovery), runs fsck and checks the workload's
// invariants. Repeated on the same file system, so recovery also runs over recovered state.
//
//   AMINO_CRASH_ITERS  iterations of the main test (default 30)
//   AMINO_CRASH_SEED   seed of the kill times and of the workload (default 1)
//
// The negative controls run the same checker against children that are broken on purpose and
// require it to catch them: a checker that never fails proves nothing.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

#include "workload.h"

namespace amino::crash {
namespace {

uint64_t EnvNumber(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "amino-crash-XXXXXX").string();
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    if (!path_.empty() && !keep_) std::filesystem::remove_all(path_);
  }
  const std::string& path() const { return path_; }
  // Kept for inspection when a test fails.
  void Keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

struct ChildRun {
  bool died_of_sigkill = false;
  int exit_code = -1;  // when the child exited by itself
  bool became_ready = false;
  uint64_t reported = 0;  // commits reported in this run
  uint64_t last_reported = 0;
};

// Forks a workload child, lets it run for `run_ms` after it has opened the file system, kills
// it and collects every sequence number it reported. With `early_kill_ms` >= 0 the child is
// killed that long after the fork whether or not it is ready: while it opens the file system
// and runs recovery.
ChildRun CrashOnce(const std::string& dir, Mode mode, uint64_t first_seq, uint64_t seed, int run_ms,
                   int early_kill_ms = -1) {
  ChildRun run;
  int fds[2];
  if (pipe(fds) != 0) return run;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    _exit(RunWorkload(dir, mode, first_seq, seed, fds[1]));
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return run;
  }

  using Clock = std::chrono::steady_clock;
  auto ready_deadline =
      Clock::now() + (early_kill_ms >= 0 ? std::chrono::milliseconds(early_kill_ms)
                                         : std::chrono::milliseconds(20000));
  Clock::time_point kill_at = Clock::time_point::max();
  bool eof = false;
  while (!eof) {
    auto now = Clock::now();
    auto deadline = run.became_ready ? kill_at : ready_deadline;
    if (now >= deadline) break;
    int wait_ms =
        static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) +
        1;
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0) continue;
    uint64_t seq;
    ssize_t n = read(fds[0], &seq, sizeof seq);
    if (n <= 0) {
      eof = true;  // the child died by itself
      break;
    }
    if (n != sizeof seq) continue;  // cannot happen: writes of 8 bytes are atomic
    if (seq == 0) {
      run.became_ready = true;
      kill_at =
          early_kill_ms >= 0 ? ready_deadline : Clock::now() + std::chrono::milliseconds(run_ms);
    } else {
      run.reported++;
      run.last_reported = seq;
    }
  }
  kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Reports written before the kill.
  uint64_t seq;
  while (read(fds[0], &seq, sizeof seq) == sizeof seq) {
    if (seq != 0) {
      run.reported++;
      run.last_reported = seq;
    }
  }
  close(fds[0]);
  run.died_of_sigkill = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

std::string Problems(const CheckResult& r) {
  std::string s;
  for (const std::string& p : r.problems) s += "  " + p + "\n";
  return s;
}

TEST(CrashTest, InvariantsHoldAfterEveryKill) {
  const uint64_t iterations = EnvNumber("AMINO_CRASH_ITERS", 30);
  const uint64_t seed = EnvNumber("AMINO_CRASH_SEED", 1);
  std::mt19937_64 rng(seed);
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  schema::Status st = Populate(dir.path());
  ASSERT_TRUE(st.ok()) << st.message();

  Expectation expect;
  uint64_t last_committed = 0;
  uint64_t total_commits = 0;
  int iterations_with_commits = 0;
  CheckResult last;
  for (uint64_t i = 0; i < iterations; ++i) {
    int run_ms = 5 + static_cast<int>(rng() % 300);
    // Every fifth child dies early, often inside recovery or its first transactions.
    bool early = i % 5 == 4;
    if (early) run_ms = static_cast<int>(rng() % 60);
    ChildRun run = CrashOnce(dir.path(), Mode::kCorrect, last_committed + 1, rng(), run_ms,
                             early ? run_ms : -1);
    ASSERT_TRUE(run.became_ready || early)
        << "iteration " << i << ": the child never opened the file system";
    ASSERT_TRUE(run.died_of_sigkill)
        << "iteration " << i << ": the child exited by itself with " << run.exit_code;
    if (run.reported > 0) expect.last_reported = run.last_reported;
    expect.child_opened = run.became_ready;
    last = CheckState(dir.path(), expect);
    if (!last.ok()) dir.Keep();
    ASSERT_TRUE(last.ok()) << "seed " << seed << ", iteration " << i << " (killed after " << run_ms
                           << " ms, " << run.reported << " commits reported, last "
                           << expect.last_reported << "), file system kept in " << dir.path()
                           << ":\n"
                           << Problems(last);
    uint64_t committed = last.last_committed - last_committed;
    total_commits += committed;
    iterations_with_commits += committed > 0;
    std::cout << "iteration " << i << ": killed " << run_ms << " ms after "
              << (early ? "the fork" : "opening") << ", " << committed
              << " transactions committed (" << run.reported << " reported)\n";
    last_committed = last.last_committed;
    expect.last_reported = last_committed;
  }

  // Progress: "nothing committed" must not pass.
  std::cout << "cell values after " << total_commits << " transactions:\n";
  int cells_moved = 0;
  for (const auto& [bucket, count] : last.histogram) {
    std::cout << "  " << bucket << ".." << bucket + 249 << ": " << std::string(count, '#') << " "
              << count << "\n";
    if (bucket != kInitialValue / 250 * 250) cells_moved += count;
  }
  EXPECT_GE(total_commits, iterations) << "too few transactions committed to mean anything";
  EXPECT_GE(iterations_with_commits, static_cast<int>(iterations / 2));
  EXPECT_GT(cells_moved, 0) << "no cell's value ever changed";
}

// Broken child: each move's debit and credit are separate transactions and the child dies
// between them. The checker must see the total broken.
TEST(CrashTest, NegativeControlSplitMovesAreCaught) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  schema::Status st = Populate(dir.path());
  ASSERT_TRUE(st.ok()) << st.message();
  ChildRun run = CrashOnce(dir.path(), Mode::kSplitMoves, 1, 7, 10000);
  ASSERT_TRUE(run.became_ready);
  ASSERT_TRUE(run.died_of_sigkill) << "exit code " << run.exit_code;
  Expectation expect;
  expect.last_reported = run.last_reported;
  CheckResult r = CheckState(dir.path(), expect);
  ASSERT_FALSE(r.ok()) << "the checker missed a half-done move";
  bool total_broken = false;
  for (const std::string& p : r.problems) total_broken |= p.find("sum of the cells") == 0;
  EXPECT_TRUE(total_broken) << Problems(r);
}

// Broken child: commits are not written out (kNoSync), so a kill loses transactions that were
// reported committed. The checker must notice within a bounded number of trials.
TEST(CrashTest, NegativeControlUnflushedCommitsAreCaught) {
  constexpr int kTrials = 10;
  std::mt19937_64 rng(EnvNumber("AMINO_CRASH_SEED", 1));
  int caught = 0;
  for (int trial = 0; trial < kTrials && caught == 0; ++trial) {
    TempDir dir;
    ASSERT_FALSE(dir.path().empty());
    schema::Status st = Populate(dir.path());
    ASSERT_TRUE(st.ok()) << st.message();
    ChildRun run =
        CrashOnce(dir.path(), Mode::kNoSync, 1, rng(), 50 + static_cast<int>(rng() % 200));
    ASSERT_TRUE(run.became_ready);
    ASSERT_TRUE(run.died_of_sigkill) << "exit code " << run.exit_code;
    if (run.reported == 0) continue;
    Expectation expect;
    expect.last_reported = run.last_reported;
    CheckResult r = CheckState(dir.path(), expect);
    for (const std::string& p : r.problems) {
      if (p.find("was reported committed") != std::string::npos) caught++;
    }
    std::cout << "trial " << trial << ": " << run.reported << " commits reported, "
              << r.last_committed << " survived\n";
  }
  EXPECT_GT(caught, 0) << "lost commits were never detected in " << kTrials << " trials";
}

}  // namespace
}  // namespace amino::crash
