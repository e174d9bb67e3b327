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
  void CountCall(long nr) { Of(nr).count++; }
  void AddMonitorNanos(uint64_t ns) { monitor_ns_ += ns; }
  void AddCallNanos(long nr, uint64_t ns) {
    PerCall& c = Of(nr);
    c.ns += ns;
    ++c.timed;
  }
  void Print(FILE* out, const char* backend, uint64_t wall_ns) const;

 private:
  struct PerCall {
    uint64_t count = 0;  // stops of the call
    uint64_t ns = 0;     // monitor time of its notifications
    uint64_t timed = 0;  // how many (a call may also stop for ptrace, untimed)
  };
  // Counted at every stop: the x86-64 numbers in an array, any other (Amino's own calls, a
  // number no kernel knows) in a map.
  static constexpr long kFlatCalls = 512;
  PerCall& Of(long nr) { return nr >= 0 && nr < kFlatCalls ? flat_[nr] : other_[nr]; }

  uint64_t kinds_[static_cast<int>(StopKind::kCount)] = {};
  PerCall flat_[kFlatCalls] = {};
  std::map<long, PerCall> other_;
  uint64_t monitor_ns_ = 0;
};

}  // namespace amino::monitor
