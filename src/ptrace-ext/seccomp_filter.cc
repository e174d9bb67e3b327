#include "ptrace-ext/seccomp_filter.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace amino::ptrace_ext {
namespace {

// libseccomp 2.5 cannot ask for the killable wait: the program it builds is loaded here. Nothing
// after the load may make a trapped call before the monitor holds the listener, so the program
// is read back and its descriptor closed first.
std::string LoadWithFlags(scmp_filter_ctx ctx, unsigned flags, int* listener) {
  int mem = memfd_create("amino-filter", MFD_CLOEXEC);
  if (mem < 0) return std::string("memfd_create: ") + std::strerror(errno);
  int rc = seccomp_export_bpf(ctx, mem);
  off_t size = rc == 0 ? lseek(mem, 0, SEEK_END) : -1;
  std::vector<sock_filter> code(size > 0 ? static_cast<size_t>(size) / sizeof(sock_filter) : 0);
  const bool read_back =
      !code.empty() && pread(mem, code.data(), code.size() * sizeof(sock_filter), 0) ==
                           static_cast<ssize_t>(code.size() * sizeof(sock_filter));
  close(mem);
  if (rc != 0) return std::string("seccomp filter: ") + std::strerror(-rc);
  if (!read_back) return "seccomp filter: cannot read the compiled program";
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (fd < 0) return std::string("seccomp(SECCOMP_SET_MODE_FILTER): ") + std::strerror(errno);
  *listener = static_cast<int>(fd);
  return {};
}

}  // namespace

std::string InstallFilter(const std::vector<TrapRule>& rules, int* listener) {
  // Without CAP_SYS_ADMIN a filter needs no_new_privs: then a set-user-id program run under
  // Amino gains no privilege, as under any tracer.
  if (geteuid() != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return "seccomp_init failed";
  std::string err;
  bool any_notify = false;
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRACE(kForeignAbiStop));
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  for (const TrapRule& r : rules) {
    if (rc != 0) break;
    const uint32_t action = r.refuse   ? SCMP_ACT_ERRNO(static_cast<uint32_t>(r.refuse))
                            : r.notify ? SCMP_ACT_NOTIFY
                                       : SCMP_ACT_TRACE(kMonitorStop);
    any_notify |= r.notify && !r.refuse;
    if (r.arg >= 0) {
      scmp_arg_cmp cmp{static_cast<unsigned>(r.arg), SCMP_CMP_MASKED_EQ, r.mask, r.value};
      if (r.cmp != TrapRule::Cmp::kMaskedEq) {
        cmp.op = SCMP_CMP_GT;
        cmp.datum_a = r.value;
        cmp.datum_b = 0;
      }
      rc = seccomp_rule_add_array(ctx, action, static_cast<int>(r.nr), 1, &cmp);
    } else {
      rc = seccomp_rule_add(ctx, action, static_cast<int>(r.nr), 0);
    }
  }
  if (rc != 0) {
    err = std::string("seccomp filter: ") + std::strerror(-rc);
  } else if (any_notify) {
    if (!listener) {
      err = "seccomp filter: notification rules need a listener";
    } else {
      err = LoadWithFlags(
          ctx, SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, listener);
    }
  } else {
    rc = seccomp_load(ctx);
    if (rc != 0) err = std::string("seccomp filter: ") + std::strerror(-rc);
  }
  seccomp_release(ctx);
  return err;
}

std::string InstallRefusalFrom(long first, long keep, long keep_end) {
  constexpr uint32_t kX32Bit = 0x40000000;
  enum : uint8_t { kAllow = 7, kRefuse = 8 };  // the two returns' indexes
  const sock_filter code[] = {
      /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, kAllow - 2),
      /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      /* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, kAllow - 4, 0),
      /* 4 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, static_cast<uint32_t>(first), 0, kAllow - 5),
      /* 5 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, static_cast<uint32_t>(keep), 0, kRefuse - 6),
      /* 6 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, static_cast<uint32_t>(keep_end), kRefuse - 7, 0),
      /* 7 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      /* 8 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]),
                  const_cast<sock_filter*>(code)};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
    return std::string("seccomp(SECCOMP_SET_MODE_FILTER): ") + std::strerror(errno);
  }
  return {};
}

}  // namespace amino::ptrace_ext
