// A tracee's iovec arrays and buffers as the kernel takes them (import_iovec, access_ok): shared
// by every handler that performs readv/writev-like calls itself, so that bad arrays fail with
// the kernel's errno whichever file system serves the call.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "monitor/process_table.h"

namespace amino::monitor {

inline constexpr size_t kMaxRwCount = 0x7ffff000;             // MAX_RW_COUNT: one transfer's cap
inline constexpr uint64_t kUserSpaceEnd = 0x7ffffffff000ULL;  // TASK_SIZE_MAX: access_ok's limit

// access_ok: [addr, addr + len) lies in user space.
bool UserRangeOk(uint64_t addr, uint64_t len);

// The iovec array of `count` entries at `addr` in `p`: EINVAL beyond UIO_MAXIOV or for a
// negative length, EFAULT for the array or a segment outside user space. Each length is cut so
// that the total stays within MAX_RW_COUNT; *total is that total. 0 or -errno.
long ImportIovecs(Process& p, uint64_t addr, uint64_t count, std::vector<iovec>* out,
                  size_t* total);

}  // namespace amino::monitor
