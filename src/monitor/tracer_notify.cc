// The notify backend's side of the tracer: one poll() over the seccomp listener and a signalfd
// for SIGCHLD (ptrace stops and exits), and the answers to notified calls.
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "monitor/monotonic_clock.h"
#include "monitor/pending_signals.h"
#include "monitor/tracee_memory.h"
#include "monitor/tracer.h"
#include "ptrace-ext/cpu_colocation.h"
#include "ptrace-ext/ptrace.h"

namespace amino::monitor {

namespace {

SyscallRegs FromNotification(const ptrace_ext::Notification& n) {
  SyscallRegs call;
  call.regs.orig_rax = static_cast<unsigned long long>(n.data.nr);
  call.regs.rdi = n.data.args[0];
  call.regs.rsi = n.data.args[1];
  call.regs.rdx = n.data.args[2];
  call.regs.r10 = n.data.args[3];
  call.regs.r8 = n.data.args[4];
  call.regs.r9 = n.data.args[5];
  call.regs.rip = n.data.instruction_pointer;
  call.notified = true;
  call.notification_id = n.id;
  return call;
}

// Calls whose own work may wait until a signal comes (pipes, sockets, terminals, FIFOs,
// locks, leases): only these can end with the kernel's ERESTARTSYS.
bool KernelWaitsInterruptibly(long nr) {
  switch (nr) {
    case SYS_read:
    case SYS_readv:
    case SYS_pread64:
    case SYS_preadv:
    case SYS_preadv2:
    case SYS_write:
    case SYS_writev:
    case SYS_pwrite64:
    case SYS_pwritev:
    case SYS_pwritev2:
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
    case SYS_creat:
    case SYS_truncate:
    case SYS_ftruncate:
    case SYS_fcntl:
    case SYS_flock:
    case SYS_ioctl:
    case SYS_sendfile:
    case SYS_splice:
    case SYS_tee:
    case SYS_vmsplice:
    case SYS_copy_file_range:
    case SYS_sendmsg:
    case SYS_recvmsg:
    case SYS_sendto:
    case SYS_recvfrom:
    case SYS_fsync:
    case SYS_fdatasync:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool Tracer::TakeListener(pid_t pid) {
  int fd = ptrace_ext::TakeListener(pid);
  if (fd < 0) {
    std::fprintf(stderr, "amino run: cannot take the seccomp listener of the command: %s\n",
                 std::strerror(-fd));
    return false;
  }
  listener_.Reset(fd);
  sync_wake_up_ = listener_.SetSyncWakeUp();
  colocation_ = ptrace_ext::CpuColocation::Worthwhile();
  return true;
}

void Tracer::PollLoop() {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) {
    std::fprintf(stderr, "amino run: signalfd: %s\n", std::strerror(errno));
    return;
  }
  listener_.set_stop_fd(sfd);
  bool listening = true;
  // Stops that happened before the signalfd existed are pending on it anyway; drain once.
  bool alive = DrainWaits();
  while (alive) {
    ForwardPendingSignals();
    pollfd pf[2] = {{sfd, POLLIN, 0}, {listening ? listener_.fd() : -1, POLLIN, 0}};
    // Sleep until something happens, or until a parked call is to be tried again.
    const int64_t wait =
        listener_.deferred() ? 0 : parked_.WaitNs(MonotonicNs(), handler_.Releases());
    const timespec until{static_cast<time_t>(wait / 1000000000),
                         static_cast<long>(wait % 1000000000)};
    int r = ppoll(pf, 2, wait < 0 ? nullptr : &until, nullptr);
    if (r < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "amino run: poll: %s\n", std::strerror(errno));
      break;
    }
    if ((pf[1].revents & POLLIN) || listener_.deferred()) {
      const uint64_t t0 = MonotonicNs();
      const long nr = OnNotification();
      HandleExitsMeanwhile();
      const uint64_t ns = MonotonicNs() - t0;
      stats_.AddMonitorNanos(ns);
      if (nr >= 0) stats_.AddCallNanos(nr, ns);
    } else if (pf[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      listening = false;  // no task is left under the filter
    }
    if (pf[0].revents & POLLIN) {
      signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) > 0) {
      }
      alive = DrainWaits();
    }
    if (!parked_.empty()) RetryParked();
  }
  listener_.set_stop_fd(-1);
  close(sfd);
}

bool Tracer::DrainWaits() {
  for (;;) {
    int status;
    pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
    if (tid == 0) return true;
    if (tid < 0) {
      if (errno == EINTR) continue;
      if (errno != ECHILD) std::fprintf(stderr, "amino run: waitpid: %s\n", std::strerror(errno));
      return false;
    }
    HandleBatch(tid, status);
  }
}

long Tracer::OnNotification() {
  ptrace_ext::Notification n;
  if (!listener_.Next(&n)) return -1;  // the caller died meanwhile
  stats_.Count(StopKind::kNotification);
  stats_.CountCall(n.data.nr);
  // With one thread in the tree, nobody can see the caller's CPUs narrowed for an install.
  listener_.set_colocate(colocation_ && table_.size() == 1);
  Thread* t = table_.Find(n.tid);
  if (!t || !t->proc) {
    listener_.Continue(n.id);  // not a task of the tree as the monitor knows it
    return n.data.nr;
  }
  SyscallRegs call = FromNotification(n);
  DispatchNotified(*t, call);
  return n.data.nr;
}

void Tracer::DispatchNotified(Thread& t, SyscallRegs& call) {
  if (PassRecheck(t, call)) return;
  if (const long refused = Refusal(call); refused != 0) {
    listener_.Reply(call.notification_id, refused);
    return;
  }
  if (call.nr() == SYS_clone3) {
    // CLONE_UNTRACED would let the child escape: refused, and the C library falls back to
    // clone, whose flag the monitor takes out.
    uint64_t flags = 0;
    if (ReadMemory(*t.proc, call.arg(0), &flags, sizeof flags) == 0 && (flags & CLONE_UNTRACED)) {
      listener_.Reply(call.notification_id, -ENOSYS);
    } else {
      listener_.Continue(call.notification_id);
    }
    return;
  }
  Decision d = handler_.OnEntry(t, call);
  t.let_run.nr = -1;
  switch (d.kind) {
    case Decision::Kind::kPass:
      NoteLetRun(t, call);
      listener_.Continue(call.notification_id);
      return;
    case Decision::Kind::kEmulate:
      listener_.Reply(call.notification_id, d.result);
      return;
    case Decision::Kind::kReplied:
      return;
    case Decision::Kind::kPark:
      Park(t, d, true, call);
      return;
    case Decision::Kind::kObserveExit:
      // The interrupt is taken when the call returns to user space, before any signal and
      // before the program runs again: the stop shows the call's result (HandleStop). The
      // wait for the answer is killable only, so the interrupt cannot end it early.
      if (ptrace_ext::Ptrace(PTRACE_INTERRUPT, t.tid) == 0) t.exit_at_interrupt = true;
      listener_.Continue(call.notification_id);
      return;
    case Decision::Kind::kStopFirst:
      if (StopOnRestart(t, call)) return;
      break;
    case Decision::Kind::kRestart:
      break;
  }
  std::fprintf(stderr, "amino run: internal error: call %ld needs a stop but was notified\n",
               call.nr());
  listener_.Reply(call.notification_id, -ENOSYS);
}

bool Tracer::StopOnRestart(Thread& t, const SyscallRegs& call) {
  if (call.nr() != SYS_mmap) return false;
  // The interrupt is taken on the way back to user space, before the kernel restarts the call
  // (arch_do_signal_or_restart: the stop comes first, the restart after it); the wait for the
  // answer is killable only, so the interrupt cannot end it.
  if (ptrace_ext::Ptrace(PTRACE_INTERRUPT, t.tid) != 0) return false;
  t.stop_on_restart = true;
  listener_.Reply(call.notification_id, -kERestartNoIntr);
  return true;
}

void Tracer::MarkRestart(Thread& t) {
  t.stop_on_restart = false;
  SyscallRegs regs;
  if (ptrace_ext::Ptrace(PTRACE_GETREGS, t.tid, 0, &regs.regs) != 0) return;
  // Anything else (a signal was delivered first, and its handler runs before the restart) and
  // the call comes back notified, to be answered again.
  if (static_cast<long>(regs.regs.rax) != -kERestartNoIntr ||
      static_cast<long>(regs.regs.orig_rax) != SYS_mmap) {
    return;
  }
  regs.set_arg(3, regs.arg(3) | kStopMark);
  if (ptrace_ext::Ptrace(PTRACE_SETREGS, t.tid, 0, &regs.regs) == 0) t.restart_marked = true;
}

void Tracer::UnmarkRestart(Thread& t, SyscallRegs& call) {
  t.restart_marked = false;
  if (call.nr() != SYS_mmap || !(call.arg(3) & kStopMark)) return;
  // The program's own registers again, before the handler sees the call or copies them.
  call.set_arg(3, call.arg(3) & ~kStopMark);
  ptrace_ext::Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
  t.restart_unmarked = true;
}

void Tracer::NoteRecheck(Thread& t, const SyscallRegs& call) {
  // Let run from its stop, the call meets the filter again (the kernel checks a call anew
  // after a SECCOMP_RET_TRACE stop), which now notifies it: seen already, it is let through.
  t.recheck_pending = true;
  for (int i = 0; i < 6; ++i) t.recheck_args[i] = call.arg(i);
}

bool Tracer::PassRecheck(Thread& t, const SyscallRegs& call) {
  if (!t.recheck_pending) return false;
  t.recheck_pending = false;
  if (call.nr() != SYS_mmap) return false;
  for (int i = 0; i < 6; ++i) {
    if (t.recheck_args[i] != call.arg(i)) return false;
  }
  listener_.Continue(call.notification_id);
  return true;
}

void Tracer::NoteLetRun(Thread& t, const SyscallRegs& call) {
  t.let_run.nr = call.nr();
  for (int i = 0; i < 6; ++i) t.let_run.args[i] = call.arg(i);
  t.let_run.ip = call.regs.rip;
}

void Tracer::RestartUnseenCall(Thread& t) {
  // A signal ends the wait of a notified call that the monitor has not received yet (once
  // received, the wait is killable only): the kernel fails the call with ERESTARTSYS, which a
  // handler without SA_RESTART turns into EINTR, even for calls that never fail so natively
  // (a shell's close() of a pipe: the pipe stays open and its reader waits for ever). The
  // call has not run; as if the signal had come just before it, it runs after the handler.
  SyscallRegs regs;
  if (ptrace_ext::Ptrace(PTRACE_GETREGS, t.tid, 0, &regs.regs) != 0) return;
  if (static_cast<long>(regs.regs.rax) != -kERestartSys) return;
  const long nr = static_cast<long>(regs.regs.orig_rax);
  if (!notified_.count(nr)) return;
  if (KernelWaitsInterruptibly(nr)) {
    // Unless the same call came again since (rare), the kernel ran it: its own ERESTARTSYS.
    bool let_run = t.let_run.nr == nr && t.let_run.ip == regs.regs.rip;
    for (int i = 0; let_run && i < 6; ++i) let_run = t.let_run.args[i] == regs.arg(i);
    if (let_run) return;
  }
  regs.regs.rax = static_cast<unsigned long long>(-kERestartNoIntr);
  ptrace_ext::Ptrace(PTRACE_SETREGS, t.tid, 0, &regs.regs);
}

}  // namespace amino::monitor
