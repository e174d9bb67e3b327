#include "ptrace-ext/features.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>

#include "ptrace-ext/kernel_requests.h"
#include "ptrace-ext/ptrace.h"

namespace amino::ptrace_ext {
namespace {

constexpr long kMagic = 4242;

// Linux 6.6 flag; Debian 12's headers predate it.
constexpr unsigned long kNotifSetFlags = _IOW('!', 4, __u64);
constexpr __u64 kNotifSyncWakeUp = 1;

// Exit-code bits the probe child reports.
constexpr int kChildSkipWorked = 1;
constexpr int kChildNotif = 2;
constexpr int kChildNotifSync = 4;
constexpr int kChildNotifKillable = 8;

// A filter that allows everything, loaded with the killable-wait listener flag: accepted only
// by kernels that know the flag. In a child of its own, since a filter chain has at most one
// listener.
bool KillableListenerWorks() {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog prog{1, allow};
    long fd =
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
    _exit(fd < 0 ? 1 : 0);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

[[noreturn]] void ProbeChild() {
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  raise(SIGSTOP);
  int bits = 0;
  if (KillableListenerWorks()) bits |= kChildNotifKillable;
  // A listener for a call nobody makes tells whether user notification exists.
  if (scmp_filter_ctx n = seccomp_init(SCMP_ACT_ALLOW)) {
    if (seccomp_rule_add(n, SCMP_ACT_NOTIFY, SCMP_SYS(syslog), 0) == 0 && seccomp_load(n) == 0) {
      int fd = seccomp_notify_fd(n);
      if (fd >= 0) {
        bits |= kChildNotif;
        // The flags travel in the argument itself, not through a pointer.
        if (ioctl(fd, kNotifSetFlags, kNotifSyncWakeUp) == 0) bits |= kChildNotifSync;
      }
    }
    seccomp_release(n);
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_TRACE(0), SCMP_SYS(getppid), 0) != 0 ||
      seccomp_load(ctx) != 0) {
    _exit(100);
  }
  if (syscall(SYS_getppid) == kMagic) bits |= kChildSkipWorked;
  _exit(bits);
}

}  // namespace

const char* BackendName(Backend b) {
  switch (b) {
    case Backend::kSeccomp:
      return "seccomp";
    case Backend::kNotify:
      return "notify";
    case Backend::kPtrace:
      return "ptrace";
    case Backend::kKernel:
      return "kernel";
  }
  return "?";
}

bool ParseBackend(const std::string& name, Backend* out) {
  for (Backend b : {Backend::kNotify, Backend::kSeccomp, Backend::kPtrace, Backend::kKernel}) {
    if (name == BackendName(b)) {
      *out = b;
      return true;
    }
  }
  return false;
}

namespace {

// At the child's own stop (a group-stop if it stopped before the seize): whether its memory can
// be read through /proc/PID/mem and process_vm_readv, and which of the patched kernel's
// requests exist.
void ProbeAtFirstStop(pid_t pid, KernelFeatures* f) {
  long word = 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/mem", pid);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    f->proc_mem = pread(fd, &word, sizeof word, reinterpret_cast<off_t>(&kMagic)) ==
                  static_cast<ssize_t>(sizeof word);
    close(fd);
  }
  struct iovec local {
    &word, sizeof word
  }, remote{const_cast<long*>(&kMagic), sizeof word};
  f->process_vm =
      process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof word);
  // An unknown request fails with EIO. PTRACE_SELECT with no bitmap (every call stops)
  // succeeds anywhere; CHECKEMU and SYSSKIP act only at a syscall-entry stop, and refuse
  // this signal stop with EINVAL.
  f->ptrace_select = Ptrace(kPtraceSelect, pid, 0, nullptr) == 0;
  f->ptrace_checkemu = Ptrace(kPtraceCheckEmu, pid) != 0 && errno == EINVAL;
  f->ptrace_sysskip = Ptrace(kPtraceSysSkip, pid) != 0 && errno == EINVAL;
}

// The child's exit code: 100 when it could not load a seccomp filter, otherwise the bits of what
// its filters could do.
void NoteChildVerdict(int code, KernelFeatures* f) {
  if (code == 100) return;
  f->seccomp_filter = true;
  f->seccomp_skip = code & kChildSkipWorked;
  f->user_notif = code & kChildNotif;
  f->notif_sync_wakeup = code & kChildNotifSync;
  f->notif_wait_killable = code & kChildNotifKillable;
}

}  // namespace

KernelFeatures ProbeKernel() {
  KernelFeatures f;
  struct utsname u;
  if (uname(&u) == 0) f.kernel = std::string(u.release) + " " + u.version;

  pid_t pid = fork();
  if (pid < 0) return f;
  if (pid == 0) ProbeChild();
  int status;
  if (Ptrace(PTRACE_SEIZE, pid, 0,
             PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL) != 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return f;
  }
  bool saw_entry = false;
  bool saw_seccomp = false;
  bool saw_stop = false;
  for (;;) {
    if (waitpid(pid, &status, __WALL) < 0) break;
    if (WIFEXITED(status)) {
      NoteChildVerdict(WEXITSTATUS(status), &f);
      break;
    }
    if (WIFSIGNALED(status)) break;
    int sig = WSTOPSIG(status);
    int event = status >> 16;
    if (sig == SIGSTOP && !saw_stop && (event == 0 || event == PTRACE_EVENT_STOP)) {
      // The child's own stop: probes, then trace its calls.
      saw_stop = true;
      ProbeAtFirstStop(pid, &f);
      Ptrace(PTRACE_SYSCALL, pid);
      continue;
    }
    if (sig == (SIGTRAP | 0x80)) {
      struct user_regs_struct regs;
      if (!f.get_syscall_info) {
        struct __ptrace_syscall_info info;
        f.get_syscall_info = Ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info) > 0;
      }
      if (Ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0 && regs.orig_rax == SYS_getppid &&
          !saw_seccomp && regs.rax == static_cast<unsigned long long>(-ENOSYS)) {
        saw_entry = true;
      }
      Ptrace(PTRACE_SYSCALL, pid);
      continue;
    }
    if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) {
      saw_seccomp = true;
      f.seccomp_trace = true;
      f.seccomp_stop_after_entry = saw_entry;
      struct user_regs_struct regs;
      if (Ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) {
        regs.orig_rax = static_cast<unsigned long long>(-1);
        regs.rax = kMagic;
        Ptrace(PTRACE_SETREGS, pid, 0, &regs);
      }
      Ptrace(PTRACE_SYSCALL, pid);
      continue;
    }
    Ptrace(PTRACE_SYSCALL, pid, 0, event ? 0 : sig);
  }
  return f;
}

bool HasKernelPatches(const KernelFeatures& f) {
  return f.ptrace_select && f.ptrace_checkemu && f.ptrace_sysskip;
}

Backend ChooseBackend(const KernelFeatures& f) {
  const bool trace = f.seccomp_filter && f.seccomp_trace && f.seccomp_skip;
  // Notification without the killable wait could run an emulated call twice (a signal after the
  // monitor acted would restart it): not worth its speed.
  if (trace && f.user_notif && f.notif_wait_killable) return Backend::kNotify;
  // The patched kernel's requests give the same stops as SECCOMP_RET_TRACE (one per selected
  // call, exit stops only where wanted), but every call of the tree takes the slow syscall path
  // for the bitmap test: seccomp stays ahead where it works (kernel-patches/README.md).
  if (trace) return Backend::kSeccomp;
  if (HasKernelPatches(f)) return Backend::kKernel;
  return Backend::kPtrace;
}

}  // namespace amino::ptrace_ext
