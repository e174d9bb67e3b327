// The ptrace-based backends' system-call stops: at an entry the call is refused, kept by the
// tracer (clone) or handed to the handler, whose decision is carried out here (run, emulate,
// watch the exit, park); at an exit the handler sees the result or an emulated one is set.
// Parked calls are tried again from here, under every backend.
#include <signal.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstdio>

#include "monitor/monotonic_clock.h"
#include "monitor/pending_signals.h"
#include "monitor/tracer.h"
#include "ptrace-ext/kernel_requests.h"
#include "ptrace-ext/ptrace.h"

namespace amino::monitor {

using ptrace_ext::Backend;
using ptrace_ext::Ptrace;

void Tracer::OnSyscallStop(Thread& t, bool seccomp) {
  SyscallRegs call;
  if (Ptrace(PTRACE_GETREGS, t.tid, 0, &call.regs) != 0) return;  // killed meanwhile
  bool entry;
  if (seccomp) {
    stats_.Count(StopKind::kSeccomp);
    entry = true;
    if (t.restart_marked) UnmarkRestart(t, call);
  } else if (!StopsAtEveryEntry()) {
    // Under the filter, syscall stops are only requested to see a call's exit.
    entry = false;
    stats_.Count(StopKind::kSyscallExit);
  } else {
    // The ptrace backend stops at every entry and exit, alternately; the kernel backend at the
    // entry of every selected call, and at its exit when resumed with PTRACE_SYSCALL.
    entry = !t.in_syscall;
    t.in_syscall = entry;
    stats_.Count(entry ? StopKind::kSyscallEntry : StopKind::kSyscallExit);
  }
  if (entry) {
    OnCallEntry(t, call, seccomp);
  } else {
    OnCallExit(t, call);
  }
}

void Tracer::OnCallEntry(Thread& t, SyscallRegs& call, bool seccomp) {
  stats_.CountCall(call.nr());
  if (seccomp && !MonitorsStop(t)) {
    // The program's own filter asked for a tracer it does not have: without one, the kernel
    // fails the call with ENOSYS.
    Emulate(t, call, seccomp, -ENOSYS);
    return;
  }
  if (ForeignAbi(t, call, seccomp)) {
    // Another ABI's numbers mean other calls: the kernel runs them as asked, unless the
    // handler refuses one that would reach what it serves.
    OnForeignCall(t, call, seccomp);
    return;
  }
  if (call.nr() == SYS_clone || call.nr() == SYS_clone3) {
    // The tracer's own business, never a handler's.
    if (!KeepTraced(t, call, seccomp)) Resume(t);
    return;
  }
  if (const long refused = Refusal(call); refused != 0) {
    Emulate(t, call, seccomp, refused);
    return;
  }
  if (!seccomp && handler_.Emulates() && InstallsOwnFilter(call)) {
    // Under PTRACE_SYSCALL the monitor acts at the entry stop, before the program's own
    // filter runs: emulated calls would bypass it. Refused rather than silently unenforced.
    std::fprintf(stderr,
                 "amino run: process %d installs its own seccomp filter, which calls the "
                 "monitor emulates would bypass under --backend %s: refused (use the "
                 "notify or seccomp backend)\n",
                 t.tid, ptrace_ext::BackendName(options_.backend));
    Emulate(t, call, seccomp, -EPERM);
    return;
  }
  if (!seccomp && !trapped_.count(call.nr())) {
    // The ptrace backend stops on every call; only file calls go to the handler.
    Resume(t);
    return;
  }
  Dispatch(t, call, seccomp);
}

void Tracer::OnCallExit(Thread& t, SyscallRegs& call) {
  if (t.want_exit_stop) {
    t.want_exit_stop = false;
    if (t.pending_nr == -1) {
      call.regs.rax = t.pending_args[0];
      if (t.interrupted_nr >= 0) {
        // The call gave way to a signal: with its number back, the kernel restarts it or
        // fails it with EINTR as the signal's SA_RESTART says.
        call.regs.orig_rax = static_cast<unsigned long long>(t.interrupted_nr);
        t.interrupted_nr = -1;
      }
      Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
    } else {
      call.regs.orig_rax = static_cast<unsigned long long>(t.pending_nr);
      handler_.OnExit(t, call);
      Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);  // the handler may set result or registers
    }
  }
  Resume(t);
}

void Tracer::Emulate(Thread& t, SyscallRegs& call, bool seccomp, long result) {
  call.Skip(result);
  Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
  if (!seccomp && options_.backend == Backend::kKernel) {
    // PTRACE_CHECKEMU: the kernel skips the call and keeps rax; no exit stop.
    t.want_exit_stop = false;
    t.in_syscall = false;
    if (Ptrace(ptrace_ext::kPtraceCheckEmu, t.tid) == 0) return;
    // Only a killed tracee gets here (the request is valid at every entry stop).
    t.in_syscall = true;
    t.want_exit_stop = true;
    t.pending_nr = -1;
    t.pending_args[0] = static_cast<unsigned long long>(result);
  } else if (!seccomp) {
    // The kernel overwrites rax with -ENOSYS for the skipped call: set it at the exit stop.
    t.want_exit_stop = true;
    t.pending_nr = -1;
    t.pending_args[0] = static_cast<unsigned long long>(result);
  } else {
    t.want_exit_stop = false;
  }
  Resume(t);
}

void Tracer::Dispatch(Thread& t, SyscallRegs& call, bool seccomp) {
  Decision d = handler_.OnEntry(t, call);
  const bool unmarked = t.restart_unmarked;
  t.restart_unmarked = false;
  if (unmarked && (d.kind == Decision::Kind::kPass || d.kind == Decision::Kind::kObserveExit)) {
    NoteRecheck(t, call);
  }
  switch (d.kind) {
    case Decision::Kind::kPass:
      t.want_exit_stop = false;
      break;
    case Decision::Kind::kObserveExit:
      t.want_exit_stop = true;
      t.pending_nr = call.nr();
      Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
      break;
    case Decision::Kind::kEmulate:
      Emulate(t, call, seccomp, d.result);
      return;
    case Decision::Kind::kRestart:
      // The call runs again from its instruction: its next stop is a fresh entry.
      t.want_exit_stop = false;
      t.in_syscall = false;
      Resume(t);
      return;
    case Decision::Kind::kPark:
      t.parked_seccomp = seccomp;
      Park(t, d, false, {});
      return;
    case Decision::Kind::kReplied:
    case Decision::Kind::kStopFirst:
      std::fprintf(stderr, "amino run: internal error: a stopped call answered as notified\n");
      call.Skip(-ENOSYS);
      Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
      break;
  }
  Resume(t);
}

void Tracer::Interrupt(Thread& t, SyscallRegs& call, bool seccomp, bool interruptible) {
  // Skip the call now and, at its exit stop, give it back its number with the restart code:
  // the signal is then delivered and the call restarted (or EINTR) as after a kernel wait.
  const long nr = call.nr();
  const long code = interruptible ? -kERestartSys : -kERestartNoIntr;
  call.Skip(code);
  Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
  t.want_exit_stop = true;
  t.pending_nr = -1;
  t.pending_args[0] = static_cast<unsigned long long>(code);
  t.interrupted_nr = nr;
  (void)seccomp;
  Resume(t);
}

void Tracer::Park(const Thread& t, const Decision& d, bool notified, const SyscallRegs& call) {
  ParkedCall p;
  p.tid = t.tid;
  p.notified = notified;
  p.call = call;
  p.interruptible = d.interruptible;
  p.lock_wait = d.lock_wait;
  parked_.Park(p, MonotonicNs(), handler_.Releases());
}

void Tracer::RetryParked() {
  std::vector<ParkedCall> ready = parked_.TakeReady(MonotonicNs(), handler_.Releases());
  for (ParkedCall& p : ready) {
    Thread* t = table_.Find(p.tid);
    if (!t) continue;
    // A signal is looked for (in /proc, which is dear) when the wait's pause ran out; a call
    // tried for a release that succeeds takes the signal after it, as it could natively.
    if (p.notified) {
      if (!listener_.Pending(p.call.notification_id)) continue;  // killed meanwhile
      if (p.due && SignalPending(p.tid)) {
        // An interruptible wait ends as the kernel's: its ERESTARTSYS is left to the handler.
        if (p.interruptible) {
          NoteLetRun(*t, p.call);
        } else {
          t->let_run.nr = -1;
        }
        listener_.Reply(p.call.notification_id, p.interruptible ? -kERestartSys : -kERestartNoIntr);
        continue;
      }
      DispatchNotified(*t, p.call);
      continue;
    }
    SyscallRegs call;
    if (Ptrace(PTRACE_GETREGS, p.tid, 0, &call.regs) != 0) continue;
    if (p.due && SignalPending(p.tid)) {
      Interrupt(*t, call, t->parked_seccomp, p.interruptible);
      continue;
    }
    Dispatch(*t, call, t->parked_seccomp);
  }
  HandleExitsMeanwhile();
  parked_.EndRetries();
}

}  // namespace amino::monitor
