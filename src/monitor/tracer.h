// The tracer: starts the command under ptrace (and the seccomp filter), follows every task the
// tree creates, re-injects signals, handles group-stops, and hands each trapped call to a
// CallHandler. Ends when the whole tree has ended; returns the command's exit status.
#pragma once

#include <cstdio>
#include <set>
#include <string>
#include <vector>
#include <sys/types.h>

#include "monitor/call_handler.h"
#include "monitor/process_table.h"
#include "monitor/stats.h"
#include "ptrace-ext/features.h"

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
  void HandleStop(pid_t tid, int status);
  void HandleExit(pid_t tid, int status);
  void OnSyscallStop(Thread& t, bool seccomp);
  void OnNewTask(Thread& parent, int event);
  void OnExec(pid_t tid);
  void OnGroupStop(Thread& t, int sig);
  void Resume(Thread& t, int sig = 0);
  void ForwardPendingSignals();
  void Dispatch(Thread& t, SyscallRegs& call, bool seccomp);
  void RetryParked();

  TracerOptions options_;
  CallHandler& handler_;
  ProcessTable table_;
  Stats stats_;
  pid_t root_ = -1;
  int root_status_ = -1;
  std::set<long> trapped_;      // the calls handed to the handler
  std::vector<pid_t> parked_;  // threads whose call waits for a lock
};

}  // namespace amino::monitor
