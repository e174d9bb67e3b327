// Calls the tracer refuses or handles before any handler sees them: the refusals of the filter
// (io_uring, the monitor as a target, a listener of the tracee's own, calls newer than the
// monitor), calls of other ABIs, and the calls that keep a child traced (tracer.h).
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "amino/amino.h"
#include "monitor/mount_cover.h"
#include "monitor/pending_signals.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"
#include "monitor/tracer.h"
#include "ptrace-ext/ptrace.h"
#include "ptrace-ext/seccomp_filter.h"

namespace amino::monitor {

using ptrace_ext::Backend;
using ptrace_ext::Ptrace;

namespace {

// A call numbered from kFirstUnknownSyscall up (x86-64, not libamino's).
bool IsUnknown(long nr) {
  return nr >= kFirstUnknownSyscall && nr < static_cast<long>(kX32SyscallBit) &&
         !IsLibaminoCall(nr);
}

}  // namespace

bool Tracer::InstallsOwnFilter(const SyscallRegs& call) {
  if (call.nr() == SYS_seccomp) return call.arg(0) == SECCOMP_SET_MODE_FILTER;
  return call.nr() == SYS_prctl && call.arg(0) == PR_SET_SECCOMP &&
         call.arg(1) == SECCOMP_MODE_FILTER;
}

long Tracer::Refusal(const SyscallRegs& call) const {
  const auto names_monitor = [&](int arg) {
    return static_cast<pid_t>(static_cast<uint32_t>(call.arg(arg))) == monitor_;
  };
  switch (call.nr()) {
    case SYS_io_uring_setup:
    case SYS_io_uring_enter:
    case SYS_io_uring_register:
      return -ENOSYS;
    case SYS_pidfd_open:
    case SYS_process_vm_readv:
    case SYS_process_vm_writev:
      return names_monitor(0) ? -EPERM : 0;
    case SYS_ptrace:
      return names_monitor(1) ? -EPERM : 0;
    case SYS_seccomp:
      // A filter of the program's own with a listener: its SECCOMP_RET_USER_NOTIF would
      // outrank the monitor's SECCOMP_RET_TRACE, and its CONTINUE run a call unseen. Refused
      // as the kernel refuses a second listener in a chain (the notify backend's own is one).
      return call.arg(0) == SECCOMP_SET_MODE_FILTER &&
                     (call.arg(1) & SECCOMP_FILTER_FLAG_NEW_LISTENER)
                 ? -EBUSY
                 : 0;
    default:
      return IsUnknown(call.nr()) ? -ENOSYS : 0;
  }
}

long Tracer::ForeignRefusal(const ForeignCall& c) const {
  if (c.native_nr < 0) {
    // A number this system's libseccomp cannot name: newer than the monitor if it is from
    // kFirstUnknownSyscall up (the ABIs share numbers from 424 on).
    return static_cast<long>(c.nr & ~kX32SyscallBit) >= kFirstUnknownSyscall ? -ENOSYS : 0;
  }
  SyscallRegs native;
  native.regs.orig_rax = static_cast<unsigned long long>(c.native_nr);
  native.regs.rdi = c.args[0], native.regs.rsi = c.args[1], native.regs.rdx = c.args[2];
  native.regs.r10 = c.args[3], native.regs.r8 = c.args[4], native.regs.r9 = c.args[5];
  return Refusal(native);
}

bool Tracer::MonitorsStop(Thread& t) {
  unsigned long data = 0;
  Ptrace(PTRACE_GETEVENTMSG, t.tid, 0, &data);
  t.stop_data = data;
  return data == ptrace_ext::kMonitorStop || data == ptrace_ext::kForeignAbiStop;
}

bool Tracer::ForeignAbi(Thread& t, const SyscallRegs& call, bool seccomp) {
  if (call.regs.orig_rax & kX32SyscallBit) return true;
  if (seccomp) return t.stop_data == ptrace_ext::kForeignAbiStop;
  // The ptrace backend sees every call, and an i386 number may be any x86-64 one: each is
  // checked.
  __ptrace_syscall_info info{};
  return Ptrace(PTRACE_GET_SYSCALL_INFO, t.tid, sizeof info, &info) > 0 &&
         info.arch != AUDIT_ARCH_X86_64;
}

void Tracer::OnForeignCall(Thread& t, SyscallRegs& call, bool seccomp) {
  const ForeignCall foreign = DescribeForeign(call.regs, [&](uint64_t addr, void* out, size_t n) {
    return ReadMemory(*t.proc, addr, out, n) == 0;
  });
  if (const long refused = ForeignRefusal(foreign); refused != 0) {
    Emulate(t, call, seccomp, refused);
    return;
  }
  const long result = handler_.OnForeignCall(t, foreign);
  if (result == 0) {
    Resume(t);
    return;
  }
  if (result == kRefusedForeign && warned_foreign_.insert(t.proc->tgid).second) {
    std::fprintf(stderr,
                 "amino run: process %d made a %s system call, %s, on a file Amino serves; only "
                 "x86-64 calls are served: it fails with ENOSYS\n",
                 t.proc->tgid, ForeignAbiName(foreign.abi), foreign.name.c_str());
  }
  Emulate(t, call, seccomp, result);
}

bool Tracer::KeepTraced(Thread& t, SyscallRegs& call, bool seccomp) {
  if (call.nr() == SYS_clone) {
    if (!(call.arg(0) & CLONE_UNTRACED)) return false;
    call.regs.rdi &= ~static_cast<uint64_t>(CLONE_UNTRACED);
    Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
    t.want_exit_stop = false;
    Resume(t);
    return true;
  }
  uint64_t flags = 0;
  if (ReadMemory(*t.proc, call.arg(0), &flags, sizeof flags) != 0 || !(flags & CLONE_UNTRACED)) {
    return false;  // the kernel reports a bad pointer itself
  }
  Emulate(t, call, seccomp, -ENOSYS);  // the C library then falls back to clone
  return true;
}

}  // namespace amino::monitor
