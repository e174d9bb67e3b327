// Handing a descriptor of the monitor's to a stopped tracee, and the tracee's stack below its
// red zone as scratch memory for calls injected at a ptrace stop.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "monitor/remote_syscall.h"

namespace amino::monitor {

// Below the stack pointer, the program's own (x86-64 ABI).
inline constexpr uint64_t kRedZone = 128;

// The lower end of the mapping of thread `tid` that holds `addr` (its stack), or 0.
uint64_t MappingStart(pid_t tid, uint64_t addr);

// Gives the stopped tracee `fd` (close-on-exec) and returns its number there, or -errno: the
// tracee makes a socket pair, the monitor takes one end with pidfd_getfd and sends `fd` through
// it, the tracee receives it on the other end and closes both. The tracee's buffers lie on its
// stack below the red zone (the region is not the tracee's to write).
long PassDescriptor(RemoteSyscalls& rs, Thread& t, int fd);

}  // namespace amino::monitor
