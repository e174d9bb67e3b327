// The seccomp-bpf program that makes the calls Amino may service reach the monitor and lets
// every other call run with no stop at all. A trapped call either stops the thread for the
// tracer (SECCOMP_RET_TRACE) or is queued on a listener descriptor (SECCOMP_RET_USER_NOTIF),
// which costs a third as much but lets the monitor only pass, emulate or answer with a
// descriptor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace amino::ptrace_ext {

struct TrapRule {
  long nr;              // x86-64 system call number
  bool notify = false;  // user notification instead of a ptrace stop
  // Trap only when argument `arg` compares with `value` as `cmp` says ((arg & mask) == value,
  // arg > value); arg -1: always.
  enum class Cmp : uint8_t { kMaskedEq, kGreater };
  int arg = -1;
  uint64_t mask = 0;
  uint64_t value = 0;
  // Nonzero: the call fails with this errno without reaching the monitor (SECCOMP_RET_ERRNO,
  // which outranks every other filter's trace and notify actions).
  int refuse = 0;
  Cmp cmp = Cmp::kMaskedEq;  // how `arg` is compared (above)
};

// PTRACE_GETEVENTMSG at a seccomp stop says whose stop it is: the monitor's filter trapped an
// x86-64 call, or a call of another ABI (int 0x80, x32), whose numbers are not the x86-64
// ones. Any other value comes from a filter the program installed itself.
constexpr unsigned long kMonitorStop = 0xa317;
constexpr unsigned long kForeignAbiStop = 0xa318;

// Installs the filter in the calling process (the child, just before exec). Calls of another ABI
// (int 0x80, x32) always stop for the tracer, so none reaches a file unseen. When a rule asks
// for notification, the listener is created with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (once
// the monitor has received a call, only a fatal signal interrupts the wait for its answer, so
// an emulated call never takes effect twice) and returned in *listener (close-on-exec).
// Returns an error message, empty on success.
std::string InstallFilter(const std::vector<TrapRule>& rules, int* listener);

// Installs a second, fixed filter in the calling process: every x86-64 call numbered `first` or
// above fails with ENOSYS, as on a kernel that predates it, except the numbers in [keep,
// keep_end), which the first filter decides (x32 numbers, above the x32 bit, are left to its
// foreign-ABI stop too). The kernel's filter cache keeps every lower number free of it.
// Returns an error message, empty on success.
std::string InstallRefusalFrom(long first, long keep, long keep_end);

}  // namespace amino::ptrace_ext
