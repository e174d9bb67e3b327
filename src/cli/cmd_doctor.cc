// amino doctor: what this kernel offers the monitor, and the backend `amino run` would choose.
#include <iostream>

#include "cli/commands.h"
#include "ptrace-ext/features.h"

namespace amino::cli {

Runner AddDoctor(CLI::App& app) {
  app.add_subcommand("doctor",
                     "Probe the kernel: seccomp filter and its actions, ptrace requests, memory "
                     "transfer calls, Amino's kernel patches; print the backend 'auto' chooses.");
  return [] {
    ptrace_ext::KernelFeatures f = ptrace_ext::ProbeKernel();
    auto yes = [](bool b) { return b ? "yes" : "no"; };
    std::cout << "kernel                              " << f.kernel << "\n"
              << "seccomp filter                      " << yes(f.seccomp_filter) << "\n"
              << "seccomp RET_TRACE stops             " << yes(f.seccomp_trace) << "\n"
              << "seccomp stop can skip the call      " << yes(f.seccomp_skip) << "\n"
              << "seccomp stop after syscall entry    " << yes(f.seccomp_stop_after_entry) << "\n"
              << "seccomp user notification           " << yes(f.user_notif) << "\n"
              << "  with synchronous wake-up          " << yes(f.notif_sync_wakeup) << "\n"
              << "  with killable wait for the answer " << yes(f.notif_wait_killable) << "\n"
              << "PTRACE_GET_SYSCALL_INFO             " << yes(f.get_syscall_info) << "\n"
              << "process_vm_readv/writev             " << yes(f.process_vm) << "\n"
              << "/proc/PID/mem                       " << yes(f.proc_mem) << "\n"
              << "PTRACE_SELECT (patched kernel)      " << yes(f.ptrace_select) << "\n"
              << "PTRACE_CHECKEMU (patched kernel)    " << yes(f.ptrace_checkemu) << "\n"
              << "PTRACE_SYSSKIP (patched kernel)     " << yes(f.ptrace_sysskip) << "\n"
              << "backend 'auto' chooses              "
              << ptrace_ext::BackendName(ptrace_ext::ChooseBackend(f)) << std::endl;
    if (ptrace_ext::HasKernelPatches(f) &&
        ptrace_ext::ChooseBackend(f) != ptrace_ext::Backend::kKernel) {
      std::cout << "  (the patched kernel's requests are there too, for --backend kernel; 'auto' "
                   "keeps the faster one)"
                << std::endl;
    }
    return 0;
  };
}

}  // namespace amino::cli
