// The system calls the monitor knows, declared once (syscall_table.cc): name, argument kinds for
// --trace and --stats, and whether the seccomp filter traps them. A new call is one table row.
#pragma once

#include <cstdint>
#include <vector>

namespace amino::monitor {

// How --trace prints an argument.
enum class Arg : uint8_t {
  kNone,
  kInt,    // signed decimal
  kUint,   // unsigned decimal (sizes)
  kHex,    // pointers, masks
  kFd,     // descriptor
  kDirFd,  // descriptor or AT_FDCWD
  kPath,   // NUL-terminated string in the tracee
  kBuf,    // buffer pointer (contents not shown)
  kOpenFlags,
  kMode,  // octal
  kAtFlags,
};

struct SyscallInfo {
  long nr = -1;
  const char* name = nullptr;
  Arg args[6] = {};
  bool file = false;  // a file call: trapped by the filter, may be serviced by Amino
};

// nullptr for a number the table does not know.
const SyscallInfo* FindSyscall(long nr);
// Name for --stats and --trace ("syscall_NNN" when unknown).
const char* SyscallName(long nr);
// Every file call, for the seccomp filter.
std::vector<long> FileSyscalls();

}  // namespace amino::monitor
