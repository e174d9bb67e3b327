// What --stats reports at exit: stops by kind and by system call, and the time spent in the
// monitor (from a stop's report to the tracee's resumption), also by system call where a stop
// is one whole call (a notification: the ptrace backends' entry and exit stops are not).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>

namespace amino::monitor {

enum class StopKind {
  kSeccomp,
  kSyscallEntry,
  kSyscallExit,
  kSignal,
  kEvent,
  kGroupStop,
  kNotification,  // not a stop: a call queued on the user-notification listener
  kCount
};

class Stats {
 public:
  void Count(StopKind k) { kinds_[static_cast<int>(k)]++; }
  void CountCall(long nr) { calls_[nr]++; }
  void AddMonitorNanos(uint64_t ns) { monitor_ns_ += ns; }
  void AddCallNanos(long nr, uint64_t ns) {
    Timed& t = call_ns_[nr];
    t.ns += ns;
    ++t.stops;
  }
  void Print(FILE* out, const char* backend, uint64_t wall_ns) const;

 private:
  uint64_t kinds_[static_cast<int>(StopKind::kCount)] = {};
  std::map<long, uint64_t> calls_;
  struct Timed {
    uint64_t ns = 0;     // monitor time of the notifications of a call
    uint64_t stops = 0;  // how many (a call may also stop for ptrace, untimed)
  };
  std::map<long, Timed> call_ns_;
  uint64_t monitor_ns_ = 0;
};

}  // namespace amino::monitor
