// Making a stopped tracee execute system calls of the monitor's choosing (rr's
// AutoRemoteSyscalls in spirit). The tracee must be stopped at a system-call stop (seccomp,
// entry or exit). Each call re-executes the tracee's `syscall` instruction with other registers;
// Finish() leaves the tracee ready to execute its own call again from the start, so it is seen
// afresh by the monitor; Restore() instead puts back exactly the registers it had (for use at an
// exit stop, where the tracee's own call has completed).
// A signal that arrives meanwhile cannot be delivered in the middle of the monitor's calls: it
// is held and raised again for the thread when the RemoteSyscalls ends, so the kernel delivers
// it on the tracee's next return to user mode (the tracer then restores its siginfo).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <vector>

#include "monitor/process_table.h"
#include "monitor/syscall_regs.h"
#include "ptrace-ext/notify_listener.h"

namespace amino::monitor {

class RemoteSyscalls {
 public:
  // `on_exit_status` receives a wait status that ends the tracee (killed meanwhile), so the
  // tracer's bookkeeping sees it; `stopped_at_exit`: the tracee is at a syscall-exit stop.
  // `listener`: under the notify backend, where the filter may queue an injected call; it is
  // let through, and other threads' calls taken meanwhile are deferred to the tracer.
  RemoteSyscalls(Thread& t, const SyscallRegs& saved, bool stopped_at_exit,
                 std::function<void(pid_t, int)> on_exit_status,
                 ptrace_ext::NotifyListener* listener = nullptr);
  // Raises the signals held meanwhile (a live tracee only).
  ~RemoteSyscalls();
  RemoteSyscalls(const RemoteSyscalls&) = delete;
  RemoteSyscalls& operator=(const RemoteSyscalls&) = delete;
  // The call's result (-errno on failure), or -ESRCH if the tracee died.
  long Call(long nr, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
            uint64_t a4 = 0, uint64_t a5 = 0);
  // Re-arm the tracee's own call: it will stop for the monitor again before running.
  bool Finish();
  // As Finish, but the call runs again with `call`'s registers (arguments changed).
  bool FinishWith(const SyscallRegs& call);
  // Put back the saved registers (an exit stop: the tracee's call keeps its result).
  bool Restore();
  // The tracee's own call does not run: it returns `value` (-errno) and the tracee goes on.
  bool ReturnFromCall(long value);
  bool alive() const { return alive_; }
  const SyscallRegs& saved() const { return saved_; }

 private:
  bool WaitForExitStop();
  pid_t WaitForStop(int* status);
  Thread& thread_;  // not touched once the tracee is gone (the tracer forgets it)
  pid_t tid_;
  SyscallRegs saved_;
  bool at_exit_;  // the tracee's registers describe a completed call (rip after `syscall`)
  bool alive_ = true;
  std::vector<siginfo_t> held_;  // signals that arrived during the calls
  std::function<void(pid_t, int)> on_exit_status_;
  ptrace_ext::NotifyListener* listener_;
};

}  // namespace amino::monitor
