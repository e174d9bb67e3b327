// A system call as the tracee made it: number and arguments from the x86-64 registers, and the
// helpers to skip it (emulation) or to set its result.
#pragma once

#include <sys/user.h>

#include <cstdint>

namespace amino::monitor {

struct SyscallRegs {
  user_regs_struct regs{};
  // The call came by seccomp user notification, not by a ptrace stop: only the number and
  // arguments are known, and it can only be passed, emulated or answered with a descriptor.
  bool notified = false;
  uint64_t notification_id = 0;

  long nr() const { return static_cast<long>(regs.orig_rax); }
  uint64_t arg(int i) const {
    switch (i) {
      case 0:
        return regs.rdi;
      case 1:
        return regs.rsi;
      case 2:
        return regs.rdx;
      case 3:
        return regs.r10;
      case 4:
        return regs.r8;
      default:
        return regs.r9;
    }
  }
  long result() const { return static_cast<long>(regs.rax); }
  // At an entry or seccomp stop: the call is not made and returns `value` (-errno on failure).
  void Skip(long value) {
    regs.orig_rax = static_cast<unsigned long long>(-1);
    regs.rax = static_cast<unsigned long long>(value);
  }
};

}  // namespace amino::monitor
