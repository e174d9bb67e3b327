// Bookkeeping every handler with shadow descriptors shares: a shadow is a placeholder kernel
// object the tracee holds (found again by its inode), standing for a file the monitor serves.
// These follow the kernel's own descriptor operations that the monitor observes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "monitor/process_table.h"
#include "monitor/syscall_regs.h"

namespace amino::monitor {

// The descriptors carried in SCM_RIGHTS messages of the tracee's msghdr at `msghdr_addr`.
std::vector<int> PassedFds(Process& p, uint64_t msghdr_addr);

// After close_range(first, last, flags) (`call`, the original registers) succeeded: the table
// forgets the closed descriptors (calling `on_close` for each), or is unshared.
void ApplyCloseRange(Thread& t, const SyscallRegs& call,
                     const std::function<void(OpenFile&)>& on_close);

// The inode of descriptor `fd` of task `tid` (0 when it is not open).
ino_t InodeOfFd(pid_t tid, int fd);

}  // namespace amino::monitor
