#include "ptrace-ext/seccomp_filter.h"

#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace amino::ptrace_ext {

std::string InstallTraceFilter(const std::vector<long>& trapped) {
  // Without CAP_SYS_ADMIN a filter needs no_new_privs: then a set-user-id program run under
  // Amino gains no privilege, as under any tracer.
  if (geteuid() != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return "seccomp_init failed";
  std::string err;
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRACE(0));
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  for (long nr : trapped) {
    if (rc != 0) break;
    if (nr == SYS_mmap) {
      // Anonymous mappings are the loader's and malloc's bread and butter: only file mappings stop.
      rc = seccomp_rule_add(ctx, SCMP_ACT_TRACE(0), static_cast<int>(nr), 1,
                            SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_ANONYMOUS, 0));
    } else {
      rc = seccomp_rule_add(ctx, SCMP_ACT_TRACE(0), static_cast<int>(nr), 0);
    }
  }
  if (rc == 0) rc = seccomp_load(ctx);
  if (rc != 0) err = std::string("seccomp filter: ") + std::strerror(-rc);
  seccomp_release(ctx);
  return err;
}

}  // namespace amino::ptrace_ext
