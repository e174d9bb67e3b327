#include "monitor/stats.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "monitor/syscall_table.h"

namespace amino::monitor {

namespace {

// VmHWM from /proc/self/status; -1 when it cannot be read.
long PeakResidentKib() {
  FILE* f = std::fopen("/proc/self/status", "re");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}

}  // namespace

void Stats::Print(FILE* out, const char* backend, uint64_t wall_ns) const {
  static const char* kNames[] = {"seccomp", "syscall-entry", "syscall-exit", "signal",
                                 "event",   "group-stop",    "notification"};
  uint64_t total = 0;
  for (uint64_t k : kinds_) total += k;
  std::fprintf(out, "amino: backend %s, %llu stops, %.3f ms in the monitor of %.3f ms\n", backend,
               static_cast<unsigned long long>(total), monitor_ns_ / 1e6, wall_ns / 1e6);
  // The monitor's own peak (its process alone: the traced programs are other processes). The
  // database regions it maps count where it touched them. VmHWM is this program's: getrusage's
  // ru_maxrss would also count the memory of whatever forked it before the exec.
  if (const long peak = PeakResidentKib(); peak >= 0) {
    std::fprintf(out, "amino: monitor peak resident memory %ld KiB\n", peak);
  }
  std::fprintf(out, "%-16s %10s\n", "stop kind", "stops");
  for (int i = 0; i < static_cast<int>(StopKind::kCount); ++i) {
    std::fprintf(out, "%-16s %10llu\n", kNames[i], static_cast<unsigned long long>(kinds_[i]));
  }
  std::vector<std::pair<long, PerCall>> calls;
  for (long nr = 0; nr < kFlatCalls; ++nr) {
    if (flat_[nr].count || flat_[nr].timed) calls.emplace_back(nr, flat_[nr]);
  }
  calls.insert(calls.end(), other_.begin(), other_.end());
  std::sort(calls.begin(), calls.end(), [](auto& a, auto& b) {
    return a.second.count != b.second.count ? a.second.count > b.second.count : a.first < b.first;
  });
  const bool any_timed =
      std::any_of(calls.begin(), calls.end(), [](auto& c) { return c.second.timed > 0; });
  // For calls that came as notifications, the monitor's time for them too, and per such stop:
  // the cost of each kind of call, without a profiler.
  std::fprintf(out, "%-20s %10s%s\n", "system call", "stops",
               any_timed ? "   monitor ms  µs/stop" : "");
  for (auto& [nr, c] : calls) {
    if (c.timed == 0) {
      std::fprintf(out, "%-20s %10llu\n", SyscallName(nr),
                   static_cast<unsigned long long>(c.count));
      continue;
    }
    std::fprintf(out, "%-20s %10llu %12.3f %8.2f\n", SyscallName(nr),
                 static_cast<unsigned long long>(c.count), c.ns / 1e6, c.ns / 1e3 / c.timed);
  }
}

}  // namespace amino::monitor
