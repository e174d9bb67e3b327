#include "monitor/tracee_iovecs.h"

#include <limits.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>

#include "monitor/tracee_memory.h"

namespace amino::monitor {

bool UserRangeOk(uint64_t addr, uint64_t len) {
  const uint64_t end = addr + len;
  return end >= addr && end <= kUserSpaceEnd;
}

long ImportIovecs(Process& p, uint64_t addr, uint64_t count, std::vector<iovec>* out,
                  size_t* total) {
  *total = 0;
  if (count > IOV_MAX) return -EINVAL;
  out->resize(count);
  if (count && ReadMemory(p, addr, out->data(), count * sizeof(iovec)) != 0) return -EFAULT;
  for (const iovec& v : *out) {
    if (static_cast<ssize_t>(v.iov_len) < 0) return -EINVAL;
  }
  for (iovec& v : *out) {
    if (!UserRangeOk(reinterpret_cast<uint64_t>(v.iov_base), v.iov_len)) return -EFAULT;
    v.iov_len = std::min(v.iov_len, kMaxRwCount - *total);
    *total += v.iov_len;
  }
  return 0;
}

}  // namespace amino::monitor
