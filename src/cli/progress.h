// Progress of a long copy on stderr: files and bytes so far. On a terminal one line is
// rewritten in place (at most ten times a second); otherwise, when asked for, a line a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace amino::cli {

class Progress {
 public:
  // `verb` names the work ("import"); shown when stderr is a terminal or `forced`.
  Progress(std::string verb, bool forced);

  // Starts counting from zero (a retried transaction copies everything again).
  void Reset();
  void AddFile();
  void AddBytes(uint64_t n);
  // Shows the final count; `done` says whether the work completed.
  void Finish(bool done);

  uint64_t files() const { return files_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void MaybeShow();
  void Show(bool final_line, bool done);

  const std::string verb_;
  const bool tty_;
  const bool enabled_;
  uint64_t files_ = 0;
  uint64_t bytes_ = 0;
  std::chrono::steady_clock::time_point last_shown_{};
};

// "1.5 MiB", "12 bytes".
std::string HumanBytes(uint64_t n);

}  // namespace amino::cli
