// The invariant workload of the crash test (DESIGN.md §8): cells are files holding decimal
// integers whose total never changes; each transaction moves value between random cells, moves a
// cell between two directories, replaces a scratch file and its hard link, keeps one unlinked
// file open (an orphan for recovery to remove) and creates a marker /log/<seq>. After any crash
// the state must be exactly that of some prefix of the committed transactions.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "schema/filesystem.h"

namespace amino::crash {

inline constexpr int kCells = 64;
inline constexpr int64_t kInitialValue = 1000;
inline constexpr int64_t kTotal = kCells * kInitialValue;
inline constexpr size_t kScratchBytes = 6000;  // two pages, the second partial
// Markers of the last kMarkerWindow transactions are kept (older ones are removed by the
// transaction that is kMarkerWindow newer), so long runs stay small.
inline constexpr uint64_t kMarkerWindow = 1000;

// How the workload child commits.
enum class Mode {
  kCorrect,     // each logical step is one transaction, committed with kWriteNoSync
  kSplitMoves,  // broken: a move's debit and credit are separate transactions, and the child
                // dies between them (a negative control for the total)
  kNoSync,      // broken: commits stay in memory (kNoSync) and die with the process
};

// Creates the file system in `dir` with every cell at kInitialValue.
schema::Status Populate(const std::string& dir);

// Runs transactions forever (or until it dies), starting with sequence number `first_seq`, and
// writes each committed sequence number to `report_fd` as 8 bytes; 0 once the file system is
// open. Meant to run in a forked child; returns only on an error (the exit code to use).
int RunWorkload(const std::string& dir, Mode mode, uint64_t first_seq, uint64_t seed,
                int report_fd);

// What the parent learned from the child's reports.
struct Expectation {
  uint64_t last_reported = 0;  // highest sequence number the children reported committed
  // The last child had the file system open (it reported so) when it was killed: its death
  // must be recovered from. A child killed before that may have died before it touched the
  // database, which then needs no recovery.
  bool child_opened = true;
};

struct CheckResult {
  std::vector<std::string> problems;  // empty when every invariant holds
  uint64_t last_committed = 0;        // highest marker present
  std::map<int64_t, int> histogram;   // cell value bucket (by 250) -> cells
  bool ok() const { return problems.empty(); }
};

// Opens the file system (running recovery), checks that recovery left no orphan or open count,
// fsck, and the workload's invariants.
CheckResult CheckState(const std::string& dir, const Expectation& expect);

std::string ScratchContent(uint64_t seq);

}  // namespace amino::crash
