// Bookkeeping every handler with shadow descriptors shares: a shadow is a placeholder kernel
// object the tracee holds (found again by its inode), standing for a file the monitor serves.
// These follow the kernel's own descriptor operations that the monitor observes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "monitor/call_handler.h"
#include "monitor/process_table.h"
#include "monitor/syscall_regs.h"
#include "ptrace-ext/notify_listener.h"

namespace amino::monitor {

// The descriptors carried in SCM_RIGHTS messages of the tracee's msghdr at `msghdr_addr`.
std::vector<int> PassedFds(Process& p, uint64_t msghdr_addr);

// After close_range(first, last, flags) (`call`, the original registers) succeeded: the table
// forgets the closed descriptors (calling `on_close` for each), or is unshared.
void ApplyCloseRange(Thread& t, const SyscallRegs& call,
                     const std::function<void(OpenFile&)>& on_close);

// The inode of descriptor `fd` of task `tid` (0 when it is not open).
ino_t InodeOfFd(pid_t tid, int fd);

// dup, dup2, dup3 or fcntl's F_DUPFD or F_DUPFD_CLOEXEC (`call`) answered at its notification,
// with no ptrace stop. When neither descriptor is in the table the kernel runs it as made.
// Otherwise the monitor makes the copy itself (the tracee's descriptor taken with pidfd_getfd,
// put in place with the listener's ADDFD: at the given number for dup2 and dup3, at the lowest
// free one for dup and fcntl) and records it, so that no other thread's call comes between the
// copy and its record; `on_replace` sees a tracked file the copy closes. An fcntl copy with a
// minimum is put at the lowest free number from there, looked for first: only for a caller
// that alone uses its table (DescriptorCalls sees to it). Calls the kernel fails without
// touching the table (dup3's bad flags, equal numbers) run as made.
Decision DupAtNotification(Thread& t, const SyscallRegs& call, ptrace_ext::NotifyListener& listener,
                           const std::function<void(OpenFile&)>& on_replace);

// After recvmsg (`recvmsg`, the original registers) returned: each descriptor it received that
// is a placeholder of a `File` (sent by another tracee, in `in_flight`, or still known by its
// inode in `by_ino`) enters the receiver's table.
template <typename File>
void AdoptReceived(Thread& t, const SyscallRegs& recvmsg,
                   std::unordered_multimap<ino_t, std::shared_ptr<File>>& in_flight,
                   const std::unordered_map<ino_t, std::weak_ptr<File>>& by_ino) {
  for (int fd : PassedFds(*t.proc, recvmsg.arg(1))) {
    const ino_t ino = InodeOfFd(t.tid, fd);
    if (!ino) continue;
    std::shared_ptr<File> f;
    if (auto sent = in_flight.find(ino); sent != in_flight.end()) {
      f = sent->second;
      in_flight.erase(sent);
    } else if (auto known = by_ino.find(ino); known != by_ino.end()) {
      f = known->second.lock();
    }
    if (f && f->placeholder_ino == ino) t.proc->fds->files[fd] = f;
  }
}

}  // namespace amino::monitor
