// What the running kernel offers for interception, found by trying it (never by version
// number): the seccomp filter and its actions, ptrace requests, memory transfer calls, and the
// requests of Amino's optional kernel patches.
#pragma once

#include <string>

namespace amino::ptrace_ext {

enum class Backend {
  kSeccomp,  // seccomp-bpf filter returning SECCOMP_RET_TRACE: one stop per trapped call
  kNotify,   // the filter queues hot calls on a user-notification listener, ptrace stops for the
             // rest (calls whose registers must change) and for the process life cycle
  kPtrace,   // PTRACE_SYSCALL: entry and exit stops for every call
  kKernel,   // the patched kernel's PTRACE_SELECT / CHECKEMU / SYSSKIP
};

const char* BackendName(Backend b);
bool ParseBackend(const std::string& name,
                  Backend* out);  // "notify", "seccomp", "ptrace", "kernel"

struct KernelFeatures {
  std::string kernel;           // uname -r and -v
  bool seccomp_filter = false;  // a filter can be installed (SECCOMP_SET_MODE_FILTER)
  bool seccomp_trace = false;   // SECCOMP_RET_TRACE stops a traced child (PTRACE_O_TRACESECCOMP)
  bool seccomp_skip = false;    // at a seccomp stop, syscall -1 skips the call and keeps rax
  bool seccomp_stop_after_entry = false;  // with PTRACE_SYSCALL, the seccomp stop follows the
                                          // syscall-entry stop (Linux >= 4.8 order)
  bool user_notif = false;                // SECCOMP_RET_USER_NOTIF with a listener fd
  bool notif_sync_wakeup = false;         // SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP)
  bool notif_wait_killable = false;       // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
  bool get_syscall_info = false;          // PTRACE_GET_SYSCALL_INFO
  bool process_vm = false;                // process_vm_readv / process_vm_writev
  bool proc_mem = false;                  // /proc/PID/mem readable and writable by the tracer
  bool ptrace_select = false;             // patched kernel: PTRACE_SELECT
  bool ptrace_checkemu = false;           // patched kernel: PTRACE_CHECKEMU
  bool ptrace_sysskip = false;            // patched kernel: PTRACE_SYSSKIP
};

// Probes by forking short-lived children. Takes a few milliseconds.
KernelFeatures ProbeKernel();

// Whether the kernel has all three requests of kernel-patches/.
bool HasKernelPatches(const KernelFeatures& f);

// The best backend the features allow: notify, then seccomp, then the patched kernel's
// requests, then plain ptrace.
Backend ChooseBackend(const KernelFeatures& f);

}  // namespace amino::ptrace_ext
