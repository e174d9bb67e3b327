#include "monitor/remote_syscall.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ptrace-ext/ptrace.h"

namespace amino::monitor {

using ptrace_ext::Ptrace;

namespace {

constexpr uint64_t kSyscallInsnLen = 2;  // `syscall` (0f 05) and `int $0x80` (cd 80)

// Whether task `tid` has exited and waits to be reaped: a thread-group leader stays so, and
// unreported to waitpid(tid), until the tracer has reaped every other thread of its group.
bool IsZombie(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", tid);
  FILE* f = std::fopen(path, "re");
  if (!f) return true;  // reaped already
  char line[512];
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  // "pid (comm) S ...": the state follows the last ')' (comm may hold anything).
  const char* close = read ? std::strrchr(line, ')') : nullptr;
  return !close || close[1] != ' ' || close[2] == 'Z' || close[2] == 'X';
}

}  // namespace

RemoteSyscalls::RemoteSyscalls(Thread& t, const SyscallRegs& saved, bool stopped_at_exit,
                               std::function<void(pid_t, int)> on_exit_status,
                               ptrace_ext::NotifyListener* listener)
    : thread_(t),
      tid_(t.tid),
      saved_(saved),
      at_exit_(stopped_at_exit),
      on_exit_status_(std::move(on_exit_status)),
      listener_(listener && listener->valid() ? listener : nullptr) {}

RemoteSyscalls::~RemoteSyscalls() {
  if (!alive_) return;
  // The tracee is stopped: the signals stay pending until it runs again. A signal sent to the
  // process is raised for this thread, which had taken it.
  for (const siginfo_t& info : held_) {
    if (syscall(SYS_tgkill, thread_.proc ? thread_.proc->tgid : tid_, tid_, info.si_signo) == 0)
      thread_.reraised.push_back(info);
  }
}

pid_t RemoteSyscalls::WaitForStop(int* status) {
  for (;;) {
    if (!listener_) {
      // Blocks until some task has something to report, without taking it: the stop is taken
      // when it is this task's. Waiting on this task alone could block for ever: when the
      // process ends (exit_group by another thread, SIGKILL) while this task is its leader,
      // the leader is reported only after its other threads, which only the tracer reaps.
      siginfo_t info{};
      if (waitid(P_ALL, 0, &info, WEXITED | WSTOPPED | WNOWAIT | __WALL) != 0) {
        if (errno == EINTR) continue;
        return -1;
      }
      if (info.si_pid == tid_) {
        pid_t r = waitpid(tid_, status, __WALL | WNOHANG);
        if (r < 0 && errno == EINTR) continue;
        if (r != 0) return r;
        continue;
      }
    }
    // A signal to the monitor (SIGTERM to forward, say) must not make it resume the tracee twice.
    pid_t r = waitpid(tid_, status, __WALL | WNOHANG);
    if (r < 0 && errno == EINTR) continue;
    if (r != 0) return r;
    if (!listener_) {
      // Another task's report waits for the tracer: look again shortly.
      if (IsZombie(tid_)) break;
      const timespec pause{0, 20000};
      nanosleep(&pause, nullptr);
      continue;
    }
    // The injected call may be waiting on the listener instead of running: let it run. The
    // stop descriptor wakes this wait when a task stops; if it was another task's stop, it is
    // left for the tracer (the descriptor stays readable, so yield instead of sleeping).
    pollfd pf[2] = {{listener_->fd(), POLLIN, 0}, {listener_->stop_fd(), POLLIN, 0}};
    if (poll(pf, 2, -1) <= 0) continue;
    if (!(pf[0].revents & POLLIN)) {
      if (IsZombie(tid_)) break;
      sched_yield();
      continue;
    }
    ptrace_ext::Notification n;
    if (!listener_->Receive(&n)) continue;
    if (n.tid == tid_) {
      listener_->Continue(n.id);
    } else {
      listener_->Defer(n);
    }
  }
  // Gone, and reported to the tracer once the rest of its thread group is: not here.
  errno = ESRCH;
  return -1;
}

bool RemoteSyscalls::WaitForExitStop() {
  for (;;) {
    if (Ptrace(PTRACE_SYSCALL, tid_, 0, static_cast<uintptr_t>(0)) != 0) {
      alive_ = false;
      return false;
    }
    int status;
    pid_t r = WaitForStop(&status);
    if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
      alive_ = false;
      if (r > 0) on_exit_status_(tid_, status);
      return false;
    }
    const int sig = WSTOPSIG(status);
    const int event = status >> 16;
    if (sig == (SIGTRAP | 0x80)) {
      SyscallRegs now;
      Ptrace(PTRACE_GETREGS, tid_, 0, &now.regs);
      // An entry stop still has -ENOSYS in rax; the exit stop has the result.
      if (now.regs.rax != static_cast<unsigned long long>(-ENOSYS) || now.nr() == -1) return true;
      continue;
    }
    if (event == PTRACE_EVENT_SECCOMP) continue;  // an injected call the filter traps
    if (event == 0 && sig != SIGTRAP) {
      // A signal-delivery-stop: resuming without it suppresses it until it is raised again.
      siginfo_t info{};
      if (Ptrace(PTRACE_GETSIGINFO, tid_, 0, &info) != 0) info.si_signo = sig;
      held_.push_back(info);
    }
  }
}

long RemoteSyscalls::Call(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                          uint64_t a5) {
  if (!alive_) return -ESRCH;
  SyscallRegs r = saved_;
  if (at_exit_) r.regs.rip -= kSyscallInsnLen;  // execute the `syscall` instruction again
  r.regs.orig_rax = static_cast<unsigned long long>(nr);
  r.regs.rax = static_cast<unsigned long long>(nr);
  r.regs.rdi = a0;
  r.regs.rsi = a1;
  r.regs.rdx = a2;
  r.regs.r10 = a3;
  r.regs.r8 = a4;
  r.regs.r9 = a5;
  if (Ptrace(PTRACE_SETREGS, tid_, 0, &r.regs) != 0) {
    alive_ = false;
    return -ESRCH;
  }
  if (!WaitForExitStop()) return -ESRCH;
  SyscallRegs out;
  Ptrace(PTRACE_GETREGS, tid_, 0, &out.regs);
  at_exit_ = true;
  return static_cast<long>(out.regs.rax);
}

bool RemoteSyscalls::Finish() {
  if (!alive_) return false;
  SyscallRegs r = saved_;
  if (at_exit_) {
    r.regs.rip -= kSyscallInsnLen;
    r.regs.rax = r.regs.orig_rax;  // the tracee's own call number, to run again
  }
  return Ptrace(PTRACE_SETREGS, tid_, 0, &r.regs) == 0;
}

bool RemoteSyscalls::FinishWith(const SyscallRegs& call) {
  if (!alive_) return false;
  SyscallRegs r = call;
  if (at_exit_) {
    r.regs.rip = saved_.regs.rip - kSyscallInsnLen;
    r.regs.rax = call.regs.orig_rax;
  }
  return Ptrace(PTRACE_SETREGS, tid_, 0, &r.regs) == 0;
}

bool RemoteSyscalls::ReturnFromCall(long value) {
  if (!alive_) return false;
  SyscallRegs r = saved_;
  r.regs.rax = static_cast<unsigned long long>(value);
  if (!at_exit_) r.regs.orig_rax = static_cast<unsigned long long>(-1);  // skip it
  return Ptrace(PTRACE_SETREGS, tid_, 0, &r.regs) == 0;
}

bool RemoteSyscalls::Restore() {
  if (!alive_) return false;
  return Ptrace(PTRACE_SETREGS, tid_, 0, &saved_.regs) == 0;
}

}  // namespace amino::monitor
