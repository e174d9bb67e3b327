#include "monitor/pending_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace amino::monitor {
namespace {

uint64_t Mask(const char* status, const char* field) {
  const char* p = std::strstr(status, field);
  return p ? std::strtoull(p + std::strlen(field), nullptr, 16) : 0;
}

}  // namespace

bool SignalPending(pid_t tid) {
  const std::string path = "/proc/" + std::to_string(tid) + "/status";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const uint64_t pending = Mask(buf, "\nSigPnd:") | Mask(buf, "\nShdPnd:");
  auto bit = [](int sig) { return uint64_t{1} << (sig - 1); };
  const uint64_t ignored_by_default = bit(SIGCHLD) | bit(SIGURG) | bit(SIGWINCH) | bit(SIGCONT);
  const uint64_t ignored = Mask(buf, "\nSigIgn:") | (ignored_by_default & ~Mask(buf, "\nSigCgt:"));
  return (pending & ~Mask(buf, "\nSigBlk:") & ~ignored) != 0;
}

}  // namespace amino::monitor
