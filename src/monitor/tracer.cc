#include "monitor/tracer.h"

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

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "amino/amino.h"
#include "monitor/host_dir_guard.h"
#include "monitor/monotonic_clock.h"
#include "monitor/mount_cover.h"
#include "monitor/pending_signals.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"
#include "ptrace-ext/kernel_requests.h"
#include "ptrace-ext/ptrace.h"
#include "ptrace-ext/seccomp_filter.h"

namespace amino::monitor {

using ptrace_ext::Backend;
using ptrace_ext::Ptrace;

namespace {

// Signals sent to `amino run` itself that belong to the command.
volatile sig_atomic_t pending_forward = 0;
void RecordForward(int sig) { pending_forward = sig; }

bool IsStopSignal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

unsigned long CloneFlags(Thread& parent, int event) {
  if (event == PTRACE_EVENT_FORK) return SIGCHLD;
  if (event == PTRACE_EVENT_VFORK) return CLONE_VM | CLONE_VFORK;
  SyscallRegs call;
  if (Ptrace(PTRACE_GETREGS, parent.tid, 0, &call.regs) != 0) return 0;
  if (call.nr() == SYS_clone) return call.arg(0);
  if (call.nr() == SYS_clone3) {
    uint64_t flags = 0;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/mem", parent.tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      if (pread(fd, &flags, sizeof flags, static_cast<off_t>(call.arg(0))) != sizeof flags) {
        flags = 0;
      }
      close(fd);
    }
    return flags;
  }
  return 0;
}

}  // namespace

Tracer::Tracer(TracerOptions options, CallHandler& handler)
    : options_(std::move(options)), handler_(handler) {}

int Tracer::Run() {
  const uint64_t start = MonotonicNs();
  // SIGCHLD reaches the poll loop through a signalfd; blocked before the fork so that no stop
  // of the child can be missed. The child unblocks it.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  if (options_.backend == Backend::kNotify) sigprocmask(SIG_BLOCK, &chld, nullptr);
  if (!StartCommand()) return 126;
  // Keyboard signals reach the command through the terminal; the monitor outlives them to report
  // how the command ended. Termination requests are passed on to the command.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTSTP, SIG_IGN);
  signal(SIGTTIN, SIG_IGN);
  signal(SIGTTOU, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = RecordForward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: waitpid returns EINTR
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);

  // Not handled on the spot: the handler that ran the call still holds the task's record.
  handler_.SetExitSink(
      [this](pid_t tid, int status) { exits_meanwhile_.emplace_back(tid, status); });
  handler_.SetProcessTable(&table_);
  if (options_.backend == Backend::kNotify) {
    handler_.SetListener(&listener_);
    PollLoop();
  } else {
    WaitLoop();
  }
  handler_.Finish();
  if (options_.stats) {
    std::string backend = ptrace_ext::BackendName(options_.backend);
    if (options_.backend == Backend::kNotify) {
      backend += sync_wake_up_ ? " (synchronous wake-up)" : " (no synchronous wake-up)";
    }
    stats_.Print(options_.stats_out, backend.c_str(), MonotonicNs() - start);
    handler_.PrintStats(options_.stats_out);
  }
  if (root_status_ < 0) return 126;
  if (WIFSIGNALED(root_status_)) {
    // Die the same way, so a waiting shell sees the signal (bash ends a script on a child killed
    // by SIGINT) and not merely an exit code. The monitor's own core is not wanted.
    const int sig = WTERMSIG(root_status_);
    std::fflush(nullptr);
    ReleaseHostDirGuards();  // no destructor runs after the signal
    struct rlimit no_core {
      0, 0
    };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    kill(getpid(), sig);
    return 128 + sig;  // a signal that does not end a process
  }
  return WEXITSTATUS(root_status_);
}

void Tracer::WaitLoop() {
  for (;;) {
    ForwardPendingSignals();
    int status;
    pid_t tid = waitpid(-1, &status, __WALL | (parked_.empty() ? 0 : WNOHANG));
    if (tid == 0) {
      // Only parked threads remain runnable from our side: retry them when one may go on,
      // looking for stops again at least every 200 µs.
      const int64_t wait = std::min<int64_t>(parked_.WaitNs(MonotonicNs(), handler_.Releases()),
                                             ParkedCalls::kPauseNs);
      if (wait > 0) {
        const timespec pause{0, static_cast<long>(wait)};
        nanosleep(&pause, nullptr);
      }
      RetryParked();
      continue;
    }
    if (tid < 0) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) break;
      std::fprintf(stderr, "amino run: waitpid: %s\n", std::strerror(errno));
      break;
    }
    HandleBatch(tid, status);
  }
}

void Tracer::HandleBatch(pid_t first, int first_status) {
  // waitpid(-1) reports the first waiting task in the kernel's list: a thread resumed at once
  // would stop again and win every time, starving its siblings. Every stop already waiting is
  // collected first and then handled in turn.
  batch_.clear();
  batch_.push_back({first, first_status});
  for (;;) {
    int status;
    pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
    if (tid <= 0) break;
    batch_.push_back({tid, status});
  }
  const uint64_t t0 = MonotonicNs();
  for (auto [tid, status] : batch_) {
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      HandleExit(tid, status);
    } else if (WIFSTOPPED(status)) {
      HandleStop(tid, status);
    }
  }
  HandleExitsMeanwhile();
  stats_.AddMonitorNanos(MonotonicNs() - t0);
}

void Tracer::HandleExitsMeanwhile() {
  while (!exits_meanwhile_.empty()) {
    std::vector<std::pair<pid_t, int>> exits;
    exits.swap(exits_meanwhile_);
    for (auto [tid, status] : exits) HandleExit(tid, status);
  }
}

void Tracer::ForwardPendingSignals() {
  int sig = pending_forward;
  if (sig && root_ > 0) {
    pending_forward = 0;
    kill(root_, sig);
  }
}

void Tracer::HandleExit(pid_t tid, int status) {
  if (tid == root_) root_status_ = status;
  if (Thread* t = table_.Find(tid); t && t->proc) {
    if (t->tid == t->proc->tgid) handler_.OnProcessExit(*t, status);
    handler_.OnTaskExit(*t);
  }
  table_.Remove(tid);
}

void Tracer::HandleStop(pid_t tid, int status) {
  const int sig = WSTOPSIG(status);
  const int event = status >> 16;
  Thread* t = table_.Find(tid);
  if (!t) {
    // A new task's first stop can come before its parent's clone event: hold it until then.
    table_.AddEarly(tid);
    return;
  }
  if (t->state == Thread::State::kEarlyStop && !t->proc) return;  // still held

  if (sig == (SIGTRAP | 0x80)) {
    OnSyscallStop(*t, false);
    return;
  }
  if (event == PTRACE_EVENT_STOP && t->stop_on_restart) MarkRestart(*t);
  if (event == PTRACE_EVENT_STOP && t->exit_at_interrupt) {
    // A notified call the handler observes has returned (DispatchNotified); the stop itself
    // is handled below as any other.
    t->exit_at_interrupt = false;
    SyscallRegs call;
    if (Ptrace(PTRACE_GETREGS, tid, 0, &call.regs) == 0) handler_.OnExit(*t, call);
  }
  switch (event) {
    case PTRACE_EVENT_SECCOMP:
      OnSyscallStop(*t, true);
      return;
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK:
    case PTRACE_EVENT_CLONE:
      stats_.Count(StopKind::kEvent);
      OnNewTask(*t, event);
      return;
    case PTRACE_EVENT_EXEC:
      stats_.Count(StopKind::kEvent);
      OnExec(tid);
      return;
    case PTRACE_EVENT_STOP:
      if (IsStopSignal(sig) && t->state == Thread::State::kRunning) {
        stats_.Count(StopKind::kGroupStop);
        OnGroupStop(*t, sig);
      } else {
        // A task's first stop, or a wake-up from group-stop: nothing to deliver.
        stats_.Count(StopKind::kEvent);
        t->state = Thread::State::kRunning;
        Resume(*t);
      }
      return;
    case 0:
      stats_.Count(StopKind::kSignal);
      if (t->starting && sig == SIGSTOP) {
        t->starting = false;  // the child is about to exec: trace from here, drop the stop
        if (options_.backend == Backend::kNotify && !TakeListener(tid)) {
          kill(tid, SIGKILL);
          return;
        }
        if (options_.backend == Backend::kKernel && !SelectCalls(tid)) {
          kill(tid, SIGKILL);
          return;
        }
        Resume(*t);
        return;
      }
      if (sig == SIGTRAP && IsBreakpointTrap(*t) && handler_.OnBreakpoint(*t)) {
        Resume(*t);
        return;
      }
      RestoreSignalInfo(*t, sig);
      handler_.OnSignal(*t, sig);
      if (options_.backend == Backend::kNotify) RestartUnseenCall(*t);
      Resume(*t, sig);  // signal-delivery-stop: deliver it
      return;
    default:
      stats_.Count(StopKind::kEvent);
      Resume(*t);
      return;
  }
}

void Tracer::OnNewTask(Thread& parent, int event) {
  unsigned long child_tid = 0;
  Ptrace(PTRACE_GETEVENTMSG, parent.tid, 0, &child_tid);
  const pid_t tid = static_cast<pid_t>(child_tid);
  const unsigned long flags = CloneFlags(parent, event);
  Thread& child = table_.AddChild(parent, tid, flags);
  handler_.OnNewTask(parent, child, (flags & CLONE_THREAD) != 0);
  if (child.state == Thread::State::kEarlyStop) {
    child.state = Thread::State::kRunning;
    Resume(child);
  }
  Resume(parent);
}

void Tracer::OnExec(pid_t tid) {
  unsigned long former = static_cast<unsigned long>(tid);
  Ptrace(PTRACE_GETEVENTMSG, tid, 0, &former);
  Thread& t = table_.OnExec(tid, static_cast<pid_t>(former));
  // Under ptrace the exec's exit stop follows; under the kernel backend only if its entry asked
  // for it (in_syscall stays as the entry left it).
  if (options_.backend == Backend::kPtrace) t.in_syscall = true;
  handler_.OnExec(t);
  Resume(t);
}

bool Tracer::IsBreakpointTrap(Thread& t) {
  // int3 raises SIGTRAP from the kernel (SI_KERNEL); kill(2) and friends cannot send that.
  siginfo_t info{};
  return Ptrace(PTRACE_GETSIGINFO, t.tid, 0, &info) == 0 && info.si_signo == SIGTRAP &&
         info.si_code == SI_KERNEL;
}

void Tracer::RestoreSignalInfo(Thread& t, int sig) {
  // A signal the monitor raised again (it arrived during calls the monitor ran in the thread)
  // is delivered with the siginfo it first came with: its sender, not the monitor.
  for (auto it = t.reraised.begin(); it != t.reraised.end(); ++it) {
    if (it->si_signo != sig) continue;
    Ptrace(PTRACE_SETSIGINFO, t.tid, 0, &*it);
    t.reraised.erase(it);
    return;
  }
}

void Tracer::OnGroupStop(Thread& t, int sig) {
  // The task stays stopped until SIGCONT; LISTEN lets the monitor see that without resuming it.
  Ptrace(PTRACE_LISTEN, t.tid);
  if (t.proc && t.proc->tgid == root_ && sig != SIGSTOP) {
    // A stop from the terminal (Ctrl-Z): stop `amino run` too, so the shell sees its job
    // stopped; the shell's SIGCONT wakes the monitor and the command alike.
    signal(sig, SIG_DFL);
    raise(sig);
    signal(sig, SIG_IGN);
  }
}

void Tracer::Resume(Thread& t, int sig) {
  if (options_.backend == Backend::kKernel && t.in_syscall && !t.want_exit_stop) {
    // At an entry stop whose exit the monitor does not need: PTRACE_SYSSKIP.
    t.in_syscall = false;
    if (Ptrace(ptrace_ext::kPtraceSysSkip, t.tid, 0, static_cast<uintptr_t>(sig)) == 0) return;
    t.in_syscall = true;  // killed meanwhile, or not an entry stop: the exit stop follows
  }
  const bool syscall_stops = (StopsAtEveryEntry() && !t.starting) || t.want_exit_stop;
  Ptrace(syscall_stops ? PTRACE_SYSCALL : PTRACE_CONT, t.tid, 0, static_cast<uintptr_t>(sig));
}

bool Tracer::SelectCalls(pid_t tid) {
  // Every call stops, as under PTRACE_SYSCALL alone: only for measuring what the bitmap saves
  // (kernel-patches/trap_counts.py).
  if (std::getenv("AMINO_KERNEL_NO_SELECT")) return true;
  // The handler's calls, those the tracer keeps for itself (clone, clone3) and those it refuses
  // or checks at a stop (Refusal, InstallsOwnFilter): the rest run with no stop at all.
  std::vector<unsigned long> bits(ptrace_ext::kSelectBits / (8 * sizeof(unsigned long)));
  auto select = [&](long nr) {
    if (nr < 0 || nr >= static_cast<long>(ptrace_ext::kSelectBits)) return;
    bits[nr / (8 * sizeof(unsigned long))] |= 1ul << (nr % (8 * sizeof(unsigned long)));
  };
  for (long nr : trapped_) select(nr);
  for (long nr : {SYS_clone, SYS_clone3, SYS_seccomp, SYS_prctl, SYS_io_uring_setup,
                  SYS_io_uring_enter, SYS_io_uring_register, SYS_pidfd_open, SYS_ptrace,
                  SYS_process_vm_readv, SYS_process_vm_writev}) {
    select(nr);
  }
  // The calls RemoteSyscalls injects: it runs each from a syscall stop and waits for its exit
  // stop, which an unselected call would never give.
  for (long nr : {SYS_close, SYS_dup3, SYS_ftruncate, SYS_memfd_create, SYS_mmap, SYS_mprotect,
                  SYS_munmap, SYS_openat, SYS_recvmsg, SYS_socketpair}) {
    select(nr);
  }
  for (long nr = kFirstUnknownSyscall; nr < static_cast<long>(ptrace_ext::kSelectBits); ++nr) {
    select(nr);
  }
  if (Ptrace(ptrace_ext::kPtraceSelect, tid, ptrace_ext::kSelectBits, bits.data()) != 0) {
    std::fprintf(stderr, "amino run: PTRACE_SELECT: %s\n", std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace amino::monitor
