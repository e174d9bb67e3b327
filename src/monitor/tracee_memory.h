// Reading and writing a stopped tracee's memory through /proc/PID/mem (one pread/pwrite per
// transfer, the fastest for small transfers here). Errors are what the kernel would report to
// the tracee for the same pointer: EFAULT for unmapped memory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "monitor/process_table.h"

namespace amino::monitor {

// 0 on success, else an errno.
int ReadMemory(Process& p, uint64_t addr, void* buf, size_t len);
int WriteMemory(Process& p, uint64_t addr, const void* buf, size_t len);
// Writes as much of `buf` as is mapped from `addr` on, as the kernel's copies do; returns the
// number of bytes written.
size_t WritePartial(Process& p, uint64_t addr, const void* buf, size_t len);
// A NUL-terminated string of at most `max` bytes including the NUL: ENAMETOOLONG if longer.
int ReadString(Process& p, uint64_t addr, size_t max, std::string* out);

}  // namespace amino::monitor
