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

#include <cerrno>
#include <cstring>

#include "amino/amino.h"
#include "monitor/mount_cover.h"
#include "monitor/pending_signals.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"
#include "ptrace-ext/ptrace.h"
#include "ptrace-ext/seccomp_filter.h"

namespace amino::monitor {

using ptrace_ext::Backend;
using ptrace_ext::Ptrace;

namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Signals sent to `amino run` itself that belong to the command.
volatile sig_atomic_t pending_forward = 0;
void RecordForward(int sig) { pending_forward = sig; }

bool IsStopSignal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// A call numbered from kFirstUnknownSyscall up (x86-64, not libamino's).
bool IsUnknown(long nr) {
  return nr >= kFirstUnknownSyscall && nr < static_cast<long>(kX32SyscallBit) &&
         !IsLibaminoCall(nr);
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

// fcntl stops only to copy a descriptor (F_DUPFD, F_DUPFD_CLOEXEC: the handler sees the new
// number at the exit); its other commands come by notification. The kernel reads the command
// as 32 bits: the copies are matched on those, and the notified rules cover every other value.
void AddFcntlRules(std::vector<ptrace_ext::TrapRule>* rules) {
  using Cmp = ptrace_ext::TrapRule::Cmp;
  for (uint64_t cmd : {uint64_t{F_DUPFD}, uint64_t{F_DUPFD_CLOEXEC}}) {
    ptrace_ext::TrapRule copy{SYS_fcntl, false};
    copy.arg = 1, copy.mask = 0xffffffff, copy.value = cmd;
    rules->push_back(copy);
  }
  for (Cmp cmp : {Cmp::kLess, Cmp::kGreater}) {
    ptrace_ext::TrapRule other{SYS_fcntl, true};
    other.arg = 1, other.value = F_DUPFD_CLOEXEC, other.cmp = cmp;
    rules->push_back(other);
  }
}

}  // namespace

Tracer::Tracer(TracerOptions options, CallHandler& handler)
    : options_(std::move(options)), handler_(handler) {}

bool Tracer::StartCommand() {
  for (long nr : FileSyscalls()) trapped_.insert(nr);
  for (long nr : handler_.ExtraTrapped()) trapped_.insert(nr);
  const bool notify = options_.backend == Backend::kNotify;
  std::vector<ptrace_ext::TrapRule> rules;
  for (long nr : trapped_) {
    if (nr == SYS_fcntl && notify && handler_.NeedsStop(nr)) {
      AddFcntlRules(&rules);
      notified_.insert(nr);
      continue;
    }
    ptrace_ext::TrapRule r{nr, notify && !handler_.NeedsStop(nr)};
    if (r.notify) notified_.insert(nr);
    // Anonymous mappings are the loader's and malloc's bread and butter: only file mappings.
    if (nr == SYS_mmap) r.arg = 3, r.mask = MAP_ANONYMOUS, r.value = 0;
    rules.push_back(r);
  }
  // A child must never escape tracing: CLONE_UNTRACED is taken out of clone's flags (a register
  // rewrite: a stop) and refused in clone3's (in memory the monitor does not write).
  rules.push_back({SYS_clone, false, 0, CLONE_UNTRACED, CLONE_UNTRACED});
  rules.push_back({SYS_clone3, notify});
  // Refusals (see Refusal) cost nothing in the filter; a call the handler traps anyway is
  // refused at its stop instead, since one call cannot have two unconditional actions.
  monitor_ = getpid();
  const uint64_t me = static_cast<uint32_t>(monitor_);
  const ptrace_ext::TrapRule refusals[] = {
      // io_uring's operations reach files with no system call to trap. ENOSYS, as on a kernel
      // built without it, is what its users (libuv, liburing programs) take for "fall back to
      // plain calls"; container runtimes refuse it too.
      {SYS_io_uring_setup, false, -1, 0, 0, ENOSYS},
      {SYS_io_uring_enter, false, -1, 0, 0, ENOSYS},
      {SYS_io_uring_register, false, -1, 0, 0, ENOSYS},
      // Pids are ints: the kernel ignores the upper half of the register, and so does the test.
      {SYS_pidfd_open, false, 0, 0xffffffff, me, EPERM},
      {SYS_ptrace, false, 1, 0xffffffff, me, EPERM},
      {SYS_process_vm_readv, false, 0, 0xffffffff, me, EPERM},
      {SYS_process_vm_writev, false, 0, 0xffffffff, me, EPERM},
  };
  for (const ptrace_ext::TrapRule& r : refusals) {
    if (!trapped_.count(r.nr)) rules.push_back(r);
  }
  // A filter with a listener stops to be refused (see Refusal). Under the notify backend the
  // kernel refuses it already: the monitor's filter has a listener.
  if (!notify) {
    rules.push_back({SYS_seccomp, false, 1, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER});
  }
  const std::vector<std::string> covered = handler_.CoveredPoints();
  int sync[2];
  if (pipe2(sync, O_CLOEXEC) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "amino run: fork: %s\n", std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    close(sync[1]);
    char c;
    while (read(sync[0], &c, 1) < 0 && errno == EINTR) {
    }
    close(sync[0]);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the monitor blocks SIGCHLD for its signalfd
    (void)CoverMountPoints(covered);           // best effort: EPERM without CAP_SYS_ADMIN
    // Under the ptrace backend the monitor starts watching calls at this stop, so the
    // command's first traced call is its execve, as under the filter.
    if (options_.backend == Backend::kPtrace) raise(SIGSTOP);
    if (options_.backend != Backend::kPtrace) {
      int listener = -1;
      std::string err = ptrace_ext::InstallFilter(rules, &listener);
      if (err.empty()) {
        err = ptrace_ext::InstallRefusalFrom(kFirstUnknownSyscall, AMINO_SYS_BASE,
                                             AMINO_SYS_BASE + AMINO_SYS_COUNT);
      }
      if (!err.empty()) {
        std::fprintf(stderr, "amino run: %s\n", err.c_str());
        _exit(126);
      }
      // The monitor takes the listener at this stop; it closes here at exec.
      if (listener >= 0) raise(SIGSTOP);
    }
    std::vector<char*> argv;
    for (const std::string& a : options_.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    int err = errno;
    std::fprintf(stderr, "amino run: %s: %s\n", argv[0], std::strerror(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  close(sync[0]);
  long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
              PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
  if (options_.backend != Backend::kPtrace) opts |= PTRACE_O_TRACESECCOMP;
  if (Ptrace(PTRACE_SEIZE, pid, 0, opts) != 0 || Ptrace(PTRACE_INTERRUPT, pid) != 0) {
    std::fprintf(stderr, "amino run: cannot trace: %s\n", std::strerror(errno));
    kill(pid, SIGKILL);
    close(sync[1]);
    return false;
  }
  // Not dumpable from here on: no process of the monitor's uid without CAP_SYS_PTRACE can
  // attach to it, read or write its memory, or take its descriptors (the listener) with
  // pidfd_getfd. Only now: the child was forked dumpable, so the monitor could seize it.
  // Its own /proc/self entries stay readable to it (the kernel lets a thread group at itself).
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    std::fprintf(stderr, "amino run: prctl(PR_SET_DUMPABLE): %s\n", std::strerror(errno));
    kill(pid, SIGKILL);
    close(sync[1]);
    return false;
  }
  root_ = pid;
  table_.AddRoot(pid).starting =
      options_.backend == Backend::kPtrace || options_.backend == Backend::kNotify;
  close(sync[1]);  // the child may go on: it is traced
  return true;
}

int Tracer::Run() {
  const uint64_t start = NowNs();
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

  handler_.SetExitSink([this](pid_t tid, int status) { HandleExit(tid, status); });
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
    stats_.Print(options_.stats_out, backend.c_str(), NowNs() - start);
    handler_.PrintStats(options_.stats_out);
  }
  if (root_status_ < 0) return 126;
  if (WIFSIGNALED(root_status_)) {
    // Die the same way, so a waiting shell sees the signal (bash ends a script on a child killed
    // by SIGINT) and not merely an exit code. The monitor's own core is not wanted.
    const int sig = WTERMSIG(root_status_);
    std::fflush(nullptr);
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
      // Only parked threads remain runnable from our side: retry them shortly.
      struct timespec pause {
        0, 200000
      };
      nanosleep(&pause, nullptr);
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
  const uint64_t t0 = NowNs();
  for (auto [tid, status] : batch_) {
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      HandleExit(tid, status);
    } else if (WIFSTOPPED(status)) {
      HandleStop(tid, status);
    }
  }
  stats_.AddMonitorNanos(NowNs() - t0);
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
  if (Thread* t = table_.Find(tid); t && t->proc) handler_.OnTaskExit(*t);
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
        Resume(*t);
        return;
      }
      RestoreSignalInfo(*t, sig);
      if (options_.backend == Backend::kNotify) RestartUnseenCall(*t);
      Resume(*t, sig);  // signal-delivery-stop: deliver it
      return;
    default:
      stats_.Count(StopKind::kEvent);
      Resume(*t);
      return;
  }
}

void Tracer::OnSyscallStop(Thread& t, bool seccomp) {
  SyscallRegs call;
  if (Ptrace(PTRACE_GETREGS, t.tid, 0, &call.regs) != 0) return;  // killed meanwhile
  bool entry;
  if (seccomp) {
    stats_.Count(StopKind::kSeccomp);
    entry = true;
  } else if (options_.backend != Backend::kPtrace) {
    // Under the filter, syscall stops are only requested to see a call's exit.
    entry = false;
    stats_.Count(StopKind::kSyscallExit);
  } else {
    // The ptrace backend stops at every entry and exit, alternately.
    entry = !t.in_syscall;
    t.in_syscall = entry;
    stats_.Count(entry ? StopKind::kSyscallEntry : StopKind::kSyscallExit);
  }
  if (entry) {
    if (seccomp && !MonitorsStop(t)) {
      // The program's own filter asked for a tracer it does not have: without one, the kernel
      // fails the call with ENOSYS.
      stats_.CountCall(call.nr());
      Emulate(t, call, seccomp, -ENOSYS);
      return;
    }
    if (ForeignAbi(t, call, seccomp)) {
      // Another ABI's numbers mean other calls: the kernel runs them as asked, unless the
      // handler refuses one that would reach what it serves.
      stats_.CountCall(call.nr());
      OnForeignCall(t, call, seccomp);
      return;
    }
    if (call.nr() == SYS_clone || call.nr() == SYS_clone3) {
      // The tracer's own business, never a handler's.
      stats_.CountCall(call.nr());
      if (!KeepTraced(t, call, seccomp)) Resume(t);
      return;
    }
    if (const long refused = Refusal(call); refused != 0) {
      stats_.CountCall(call.nr());
      Emulate(t, call, seccomp, refused);
      return;
    }
    if (!seccomp && handler_.Emulates() && InstallsOwnFilter(call)) {
      // Under PTRACE_SYSCALL the monitor acts at the entry stop, before the program's own
      // filter runs: emulated calls would bypass it. Refused rather than silently unenforced.
      std::fprintf(stderr,
                   "amino run: process %d installs its own seccomp filter, which calls the "
                   "monitor emulates would bypass under --backend ptrace: refused (use the "
                   "notify or seccomp backend)\n",
                   t.tid);
      stats_.CountCall(call.nr());
      Emulate(t, call, seccomp, -EPERM);
      return;
    }
    if (!seccomp && !trapped_.count(call.nr())) {
      // The ptrace backend stops on every call; only file calls go to the handler.
      stats_.CountCall(call.nr());
      Resume(t);
      return;
    }
    stats_.CountCall(call.nr());
    Dispatch(t, call, seccomp);
    return;
  }
  // Exit stop.
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

void Tracer::Emulate(Thread& t, SyscallRegs& call, bool seccomp, long result) {
  call.Skip(result);
  Ptrace(PTRACE_SETREGS, t.tid, 0, &call.regs);
  if (!seccomp) {
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
      parked_.push_back({t.tid, false, {}, d.interruptible});
      return;
    case Decision::Kind::kReplied:
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

void Tracer::RetryParked() {
  std::vector<Parked> parked;
  parked.swap(parked_);
  for (Parked& p : parked) {
    Thread* t = table_.Find(p.tid);
    if (!t) continue;
    if (p.notified) {
      if (!listener_.Pending(p.call.notification_id)) continue;  // killed meanwhile
      if (SignalPending(p.tid)) {
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
    if (SignalPending(p.tid)) {
      Interrupt(*t, call, t->parked_seccomp, p.interruptible);
      continue;
    }
    Dispatch(*t, call, t->parked_seccomp);
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
  t.in_syscall = options_.backend == Backend::kPtrace;  // the exec's exit stop follows
  handler_.OnExec(t);
  Resume(t);
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
  const bool syscall_stops =
      (options_.backend == Backend::kPtrace && !t.starting) || t.want_exit_stop;
  Ptrace(syscall_stops ? PTRACE_SYSCALL : PTRACE_CONT, t.tid, 0, static_cast<uintptr_t>(sig));
}

}  // namespace amino::monitor
