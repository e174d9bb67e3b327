// The kernel's descriptor calls as a handler with shadow descriptors follows them: close,
// close_range, dup, dup2, dup3, fcntl's F_DUPFD and F_DUPFD_CLOEXEC, and descriptors passed in
// SCM_RIGHTS messages (sendmsg, recvmsg). The kernel runs each call; the process's table
// (process_table.h) takes the new numbers at the call's exit, or at once for a notified dup
// (DupAtNotification; a notified fcntl copy in a shared table at the interrupt stop that
// follows it), and a received placeholder becomes the file it stands for again. Both
// handlers (the mount's and --emulate=host's) keep their table through one of these.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "monitor/call_handler.h"
#include "monitor/process_table.h"
#include "monitor/syscall_regs.h"
#include "ptrace-ext/notify_listener.h"

namespace amino::monitor {

class DescriptorCalls {
 public:
  // One of the process's descriptors of `file` is going (close, close_range, or dup2 or dup3
  // onto it): its POSIX record locks go with it, as they go with any descriptor of the file.
  using Closing = std::function<void(Thread& t, OpenFile& file)>;
  explicit DescriptorCalls(Closing closing) : closing_(std::move(closing)) {}

  // At a call's entry. close, close_range, dup, dup2, dup3, fcntl F_DUPFD and F_DUPFD_CLOEXEC,
  // recvmsg: the decision (the kernel runs the call; at most its exit is observed, or a
  // notified dup is answered). sendmsg: the files it passes are kept for their receiver, and
  // nullopt (the call is the handler's to decide). Any other call: nullopt.
  std::optional<Decision> OnEntry(Thread& t, const SyscallRegs& call,
                                  ptrace_ext::NotifyListener* listener);
  // At the exit of a call OnEntry observed: the table follows the result and `call` gets its
  // own argument registers back. False when the thread has no such call pending.
  bool OnExit(Thread& t, SyscallRegs& call);
  // A thread ended during its call.
  void Forget(pid_t tid) { pending_.erase(tid); }
  // `file` now has a placeholder in some tracee (its placeholder_ino): a recvmsg that brings
  // that placeholder finds the file again, while it is open anywhere.
  void Known(const std::shared_ptr<OpenFile>& file) { by_ino_[file->placeholder_ino] = file; }

 private:
  struct Pending {
    enum class Kind { kDup, kCloseRange, kRecvMsg } kind = Kind::kDup;
    SyscallRegs original;
    std::shared_ptr<OpenFile> file;  // kDup: what the old number stands for (or nothing)
    int old_fd = -1;
  };
  // The call's exit is seen (OnExit).
  Decision Observe(Thread& t, const SyscallRegs& call, Pending::Kind kind,
                   std::shared_ptr<OpenFile> file = nullptr, int old_fd = -1);

  Closing closing_;
  std::unordered_map<pid_t, Pending> pending_;
  // A passed file is kept alive until received, even if the sender closes its copy meanwhile.
  std::unordered_map<ino_t, std::weak_ptr<OpenFile>> by_ino_;
  std::unordered_multimap<ino_t, std::shared_ptr<OpenFile>> in_flight_;
};

}  // namespace amino::monitor
