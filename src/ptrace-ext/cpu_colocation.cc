#include "ptrace-ext/cpu_colocation.h"

namespace amino::ptrace_ext {

CpuColocation::CpuColocation(pid_t tid) : tid_(tid) {
  const int cpu = sched_getcpu();
  if (cpu < 0 || sched_getaffinity(tid_, sizeof other_cpus_, &other_cpus_) != 0) return;
  // A thread already on one CPU, or barred from this one, is left where it is.
  if (!CPU_ISSET(cpu, &other_cpus_) || CPU_COUNT(&other_cpus_) < 2) return;
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(cpu, &here);
  if (sched_setaffinity(tid_, sizeof here, &here) != 0) return;
  other_pinned_ = true;
  // The monitor too: the caller's wake-up of it would otherwise land on the idle CPU.
  if (sched_getaffinity(0, sizeof own_cpus_, &own_cpus_) == 0) {
    self_pinned_ = sched_setaffinity(0, sizeof here, &here) == 0;
  }
}

CpuColocation::~CpuColocation() {
  if (self_pinned_) sched_setaffinity(0, sizeof own_cpus_, &own_cpus_);
  // Fails harmlessly if the thread died meanwhile.
  if (other_pinned_) sched_setaffinity(tid_, sizeof other_cpus_, &other_cpus_);
}

bool CpuColocation::Worthwhile() {
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

}  // namespace amino::ptrace_ext
