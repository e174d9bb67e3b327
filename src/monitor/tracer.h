// The tracer: starts the command under ptrace (and the seccomp filter), follows every task the
// tree creates, re-injects signals, handles group-stops, and hands each trapped call to a
// CallHandler. Ends when the whole tree has ended; returns the command's exit status.
//
// Under the notify backend, calls come two ways: ptrace stops (waitpid, woken by SIGCHLD through
// a signalfd) and the seccomp listener; one poll() waits for both. The listener is set to wake
// the monitor on the caller's CPU, which removes the cross-CPU wake-up that dominates a stop.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "monitor/call_handler.h"
#include "monitor/parked_calls.h"
#include "monitor/process_table.h"
#include "monitor/stats.h"
#include "ptrace-ext/features.h"
#include "ptrace-ext/notify_listener.h"
#include "ptrace-ext/seccomp_filter.h"

namespace amino::monitor {

struct TracerOptions {
  std::vector<std::string> argv;
  ptrace_ext::Backend backend = ptrace_ext::Backend::kSeccomp;
  bool stats = false;
  FILE* stats_out = stderr;
};

class Tracer {
 public:
  Tracer(TracerOptions options, CallHandler& handler);
  // The command's exit status as a shell reports it: its exit code, or 128+N when killed by
  // signal N. 127/126 when it could not be executed.
  int Run();

 private:
  struct Stop;
  bool StartCommand();
  // The seccomp filter's rules: the trapped calls (by notification where the handler allows),
  // the conditions on clone, mmap and fcntl, and the refusals (tracer_start.cc).
  std::vector<ptrace_ext::TrapRule> FilterRules();
  // A notified mmap the handler answered kStopFirst: interrupted, answered ERESTARTNOINTR, and
  // marked at the interrupt stop (kStopMark in its flags, a bit the kernel never reads) so
  // that the restarted call stops for the tracer, where the mark is taken off again.
  static constexpr uint64_t kStopMark = uint64_t{1} << 40;
  bool StopOnRestart(Thread& t, const SyscallRegs& call);
  void MarkRestart(Thread& t);
  void UnmarkRestart(Thread& t, SyscallRegs& call);
  void NoteRecheck(Thread& t, const SyscallRegs& call);
  bool PassRecheck(Thread& t, const SyscallRegs& call);
  // In the forked child: waits for the monitor's seize (`sync_fd`), covers the mount points,
  // installs the filter and execs the command. Never returns.
  [[noreturn]] void ExecCommand(const std::vector<ptrace_ext::TrapRule>& rules,
                                const std::vector<std::string>& covered, int sync_fd);
  void HandleStop(pid_t tid, int status);
  void HandleExit(pid_t tid, int status);
  // Exits that calls the monitor ran in a tracee saw (a task killed while the monitor made a
  // call in it): handled once the handler that made the call is done with the task.
  void HandleExitsMeanwhile();
  // tracer_syscalls.cc: a syscall stop (entry or exit), or a seccomp stop (an entry).
  void OnSyscallStop(Thread& t, bool seccomp);
  void OnCallEntry(Thread& t, SyscallRegs& call, bool seccomp);
  void OnCallExit(Thread& t, SyscallRegs& call);
  void OnNewTask(Thread& parent, int event);
  void OnExec(pid_t tid);
  void OnGroupStop(Thread& t, int sig);
  // Whether `t`'s SIGTRAP came from an int3 (a breakpoint), not from another process.
  bool IsBreakpointTrap(Thread& t);
  void RestoreSignalInfo(Thread& t, int sig);
  // Resumes from any stop: PTRACE_SYSCALL where the next stop must be a call's entry or exit,
  // PTRACE_SYSSKIP at a kernel-backend entry whose exit is not needed, else PTRACE_CONT.
  void Resume(Thread& t, int sig = 0);
  // The ptrace and kernel backends follow calls by syscall stops, without a filter.
  bool StopsAtEveryEntry() const {
    return options_.backend == ptrace_ext::Backend::kPtrace ||
           options_.backend == ptrace_ext::Backend::kKernel;
  }
  // Kernel backend: gives the command's first process its PTRACE_SELECT bitmap (inherited by
  // every task it creates).
  bool SelectCalls(pid_t tid);
  void ForwardPendingSignals();
  void Dispatch(Thread& t, SyscallRegs& call, bool seccomp);
  void RetryParked();
  // A parked call gives way to a pending signal: fails with ERESTARTSYS (interruptible) or
  // ERESTARTNOINTR, and the kernel restarts it or fails it as the signal's handler says.
  void Interrupt(Thread& t, SyscallRegs& call, bool seccomp, bool interruptible);
  void Emulate(Thread& t, SyscallRegs& call, bool seccomp, long result);
  // At a seccomp stop: whether the monitor's filter made it (and not the program's own).
  bool MonitorsStop(Thread& t);
  static bool InstallsOwnFilter(const SyscallRegs& call);
  // Calls no traced program may make, whatever the handler: io_uring (its operations would
  // reach files without a system call the monitor sees), any call that takes hold of the
  // monitor itself (pidfd_open, ptrace, process_vm_readv/writev naming its pid), a seccomp
  // filter of the program's own with a listener, and calls newer than the monitor (from
  // kFirstUnknownSyscall up, libamino's excepted). The errno to
  // fail `call` with (negative), or 0. The filter refuses them without a stop; this catches
  // them where a call stops anyway (the ptrace backend, calls a handler traps).
  long Refusal(const SyscallRegs& call) const;
  // The same for a call of another ABI, by its x86-64 namesake; numbers the monitor cannot
  // name from kFirstUnknownSyscall up fail with ENOSYS.
  long ForeignRefusal(const ForeignCall& c) const;
  bool ForeignAbi(Thread& t, const SyscallRegs& call, bool seccomp);
  // Runs a call of another ABI, or fails it as the handler says.
  void OnForeignCall(Thread& t, SyscallRegs& call, bool seccomp);
  // clone/clone3 asking for CLONE_UNTRACED: handled (true) so that the child stays traced.
  bool KeepTraced(Thread& t, SyscallRegs& call, bool seccomp);
  void WaitLoop();
  void HandleBatch(pid_t first, int first_status);
  // tracer_notify.cc
  bool TakeListener(pid_t pid);
  void PollLoop();
  bool DrainWaits();
  // Handles the next queued call: its number, or -1 when there was none to handle.
  long OnNotification();
  void DispatchNotified(Thread& t, SyscallRegs& call);
  // Records in t.let_run the notified call the kernel now runs.
  static void NoteLetRun(Thread& t, const SyscallRegs& call);
  // At a signal-delivery stop: a notified call whose wait for the monitor the signal ended
  // is restarted after the handler even without SA_RESTART.
  void RestartUnseenCall(Thread& t);

  // A call the handler parked (`notified`: it waits on the listener, with `call`).
  void Park(const Thread& t, const Decision& d, bool notified, const SyscallRegs& call);

  TracerOptions options_;
  CallHandler& handler_;
  ProcessTable table_;
  Stats stats_;
  pid_t root_ = -1;
  pid_t monitor_ = -1;  // getpid() of the monitor
  int root_status_ = -1;
  std::set<long> trapped_;                    // the calls handed to the handler
  std::set<long> notified_;                   // those the filter hands over by notification
  ParkedCalls parked_;                        // threads whose call waits (a lock, a pipe)
  std::vector<std::pair<pid_t, int>> batch_;  // stops collected by one round of waitpid
  std::vector<std::pair<pid_t, int>> exits_meanwhile_;
  ptrace_ext::NotifyListener listener_;
  bool sync_wake_up_ = false;
  bool colocation_ = false;  // the monitor may use several CPUs (ptrace-ext/cpu_colocation.h)
  std::set<pid_t> warned_foreign_;  // processes told that a foreign call was refused
};

}  // namespace amino::monitor
