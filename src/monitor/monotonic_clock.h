// The monitor's one clock: CLOCK_MONOTONIC in nanoseconds, for pauses, parked calls and the
// time the monitor spends per stop.
#pragma once

#include <time.h>

#include <cstdint>

namespace amino::monitor {

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace amino::monitor
