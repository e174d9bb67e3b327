// A notified caller and the monitor kept on one CPU while a descriptor is installed.
//
// A notified call and its answer are a hand-off between two threads of which one runs at a
// time; on one CPU each side wakes the other with no inter-processor interrupt.
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6) asks the kernel for that placement, but
// installing a descriptor (SECCOMP_IOCTL_NOTIF_ADDFD) wakes the caller, and the caller then
// the monitor, with plain wake-ups: where a CPU is idle the woken thread goes there, and each
// hop wakes a sleeping CPU. In a virtual machine that costs tens of microseconds, and the pair
// stays split for the calls after it. Pinning both threads to the monitor's CPU for the
// install keeps them together.
//
// The caller's CPUs are narrowed while it is inside its call, so its user (NotifyListener)
// answers the call only after they are given back, and pins only where the traced tree has no
// other thread that could look at them meanwhile. A process outside the tree could, for those
// few microseconds.
#pragma once

#include <sched.h>
#include <sys/types.h>

namespace amino::ptrace_ext {

class CpuColocation {
 public:
  // Pins thread `tid` and the calling thread to the CPU the calling thread is on, when `tid`
  // may run there and may also run elsewhere; the destructor gives both their CPUs back.
  // Changes nothing where either cannot be pinned (no permission, a thread gone).
  explicit CpuColocation(pid_t tid);
  ~CpuColocation();
  CpuColocation(const CpuColocation&) = delete;
  CpuColocation& operator=(const CpuColocation&) = delete;

  bool pinned() const { return other_pinned_; }

  // Whether the calling thread may run on more than one CPU: only then can it help.
  static bool Worthwhile();

 private:
  const pid_t tid_;
  bool other_pinned_ = false;
  bool self_pinned_ = false;
  cpu_set_t other_cpus_;
  cpu_set_t own_cpus_;
};

}  // namespace amino::ptrace_ext
