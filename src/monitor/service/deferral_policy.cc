#include "monitor/service/deferral_policy.h"

#include <sys/syscall.h>

#include <algorithm>

namespace amino::monitor::service {

DeferralPolicy::DeferralPolicy() {
  for (long nr : {SYS_stat,       SYS_lstat,     SYS_fstat,      SYS_newfstatat, SYS_statx,
                  SYS_access,     SYS_faccessat, SYS_faccessat2, SYS_readlink,   SYS_readlinkat,
                  SYS_getxattr,   SYS_lgetxattr, SYS_fgetxattr,  SYS_listxattr,  SYS_llistxattr,
                  SYS_flistxattr, SYS_statfs,    SYS_fstatfs,    SYS_read,       SYS_pread64,
                  SYS_readv,      SYS_preadv,    SYS_preadv2,    SYS_getdents,   SYS_getdents64}) {
    by_nr_[static_cast<size_t>(nr)].looks = true;
  }
  by_nr_[kAccessTime].looks = true;
}

bool DeferralPolicy::ShouldTry(long nr) {
  if (nr < 0 || nr > kAccessTime) return false;
  Entry& e = by_nr_[static_cast<size_t>(nr)];
  if (!e.looks) return false;
  if (e.skip == 0) return true;
  --e.skip;
  return false;
}

void DeferralPolicy::Tried(long nr, bool refused) {
  if (nr < 0 || nr > kAccessTime) return;
  Entry& e = by_nr_[static_cast<size_t>(nr)];
  if (!refused) {
    e.backoff = 0;
    return;
  }
  e.backoff = e.backoff == 0 ? 1 : static_cast<uint8_t>(std::min<int>(e.backoff * 2, kMaxSkip));
  e.skip = e.backoff;
}

}  // namespace amino::monitor::service
