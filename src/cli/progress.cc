#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace amino::cli {

std::string HumanBytes(uint64_t n) {
  if (n < 1024) return std::to_string(n) + (n == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

Progress::Progress(std::string verb, bool forced)
    : verb_(std::move(verb)), tty_(isatty(STDERR_FILENO) == 1), enabled_(tty_ || forced) {}

void Progress::Reset() {
  files_ = 0;
  bytes_ = 0;
}

void Progress::AddFile() {
  ++files_;
  MaybeShow();
}

void Progress::AddBytes(uint64_t n) {
  bytes_ += n;
  MaybeShow();
}

void Progress::MaybeShow() {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  auto period = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000);
  if (now - last_shown_ < period) return;
  last_shown_ = now;
  Show(false, false);
}

void Progress::Finish(bool done) {
  if (enabled_) Show(true, done);
}

void Progress::Show(bool final_line, bool done) {
  std::string line = "amino " + verb_ + ": " + std::to_string(files_) +
                     (files_ == 1 ? " file, " : " files, ") + HumanBytes(bytes_);
  if (final_line) line += done ? " done" : " (not committed)";
  // \r and clear-to-end-of-line rewrite the terminal line; elsewhere every line is kept.
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), final_line ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace amino::cli
