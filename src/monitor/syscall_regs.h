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
  uint64_t arg(int i) const { return const_cast<SyscallRegs*>(this)->arg_register(i); }
  // Sets argument `i` (argument rewriting at a ptrace stop).
  void set_arg(int i, uint64_t v) { arg_register(i) = v; }
  long result() const { return static_cast<long>(regs.rax); }
  // At an entry or seccomp stop: the call is not made and returns `value` (-errno on failure).
  void Skip(long value) {
    regs.orig_rax = static_cast<unsigned long long>(-1);
    regs.rax = static_cast<unsigned long long>(value);
  }

 private:
  // The register of argument `i` in the x86-64 system-call convention.
  unsigned long long& arg_register(int i) {
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
};

// At the exit of a call whose arguments the monitor rewrote: the registers the program made the
// call with, and the call's result.
inline SyscallRegs WithOwnArguments(const SyscallRegs& original, const SyscallRegs& at_exit) {
  SyscallRegs out = original;
  out.regs.rax = at_exit.regs.rax;
  out.regs.rip = at_exit.regs.rip;
  out.regs.rcx = at_exit.regs.rcx;
  out.regs.r11 = at_exit.regs.r11;
  return out;
}

}  // namespace amino::monitor
