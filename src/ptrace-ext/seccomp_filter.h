// The seccomp-bpf program that makes the calls Amino may service stop for the tracer
// (SECCOMP_RET_TRACE) and lets every other call run with no stop at all.
#pragma once

#include <string>
#include <vector>

namespace amino::ptrace_ext {

// Installs the filter in the calling process (the child, just before exec). `trapped` are
// x86-64 system call numbers. Calls of another ABI (int 0x80, x32) are trapped too, so none
// reaches a file unseen. Returns an error message, empty on success.
std::string InstallTraceFilter(const std::vector<long>& trapped);

}  // namespace amino::ptrace_ext
