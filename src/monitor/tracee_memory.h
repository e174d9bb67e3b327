// Reading and writing a stopped tracee's memory through /proc/PID/mem (one pread/pwrite per
// transfer, the fastest for small transfers here). Errors are what the kernel would report to
// the tracee for the same pointer: EFAULT for unmapped memory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "monitor/process_table.h"

namespace amino::monitor {

// 0 on success, else an errno.
int ReadMemory(Process& p, uint64_t addr, void* buf, size_t len);
int WriteMemory(Process& p, uint64_t addr, const void* buf, size_t len);
// Writes as much of `buf` as is mapped from `addr` on, as the kernel's copies do; returns the
// number of bytes written.
size_t WritePartial(Process& p, uint64_t addr, const void* buf, size_t len);
// A NUL-terminated string of at most `max` bytes including the NUL: ENAMETOOLONG if longer.
int ReadString(Process& p, uint64_t addr, size_t max, std::string* out);

// The strings a call's arguments point to, read once while the call is served: ReadString of
// one of them gives the bytes read then. For a tracee whose memory another task shares, which
// could change a path between two reads of it (the monitor's look, then the kernel's walk):
// what the monitor decides on is what it hands on (MountHandler::PinPaths).
class StringSnapshot {
 public:
  // Installs the snapshot for `p`'s current call until the scope ends (the monitor serves one
  // call at a time).
  class Scope {
   public:
    Scope(StringSnapshot& s, const Process& p);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };
  // Reads the string at `addr` now (PATH_MAX at most) and keeps it; 0 or an errno.
  int Take(Process& p, uint64_t addr);
  // The kept string at `addr`, or nullptr.
  const std::string* Find(uint64_t addr) const;
  bool empty() const { return strings_.empty(); }

 private:
  std::vector<std::pair<uint64_t, std::string>> strings_;
};

}  // namespace amino::monitor
