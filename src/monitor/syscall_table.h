// The system calls the monitor knows, declared once (syscall_table.cc): name, the role of each
// argument (which is a path, the directory it is relative to, a descriptor, flags...), the
// family of the call, whether it follows its path's last symbolic link, and whether the seccomp
// filter traps it. --trace prints arguments by role; the handlers find a call's paths and
// descriptors here instead of by hand. A new call is one table row.
#pragma once

#include <cstdint>
#include <vector>

#include "amino/amino.h"

namespace amino::monitor {

// The role of an argument (and how --trace prints it).
enum class Arg : uint8_t {
  kNone,
  kInt,         // signed decimal
  kUint,        // unsigned decimal (sizes)
  kHex,         // pointers, masks
  kFd,          // descriptor
  kDirFd,       // descriptor or AT_FDCWD: the directory of the path argument right after it
  kPath,        // a path the kernel looks up (NUL-terminated string in the tracee)
  kXattrName,   // an extended attribute's name: a string, never looked up
  kLinkTarget,  // a symbolic link's target: a string, never looked up
  kBuf,         // buffer pointer (contents not shown)
  kOpenFlags,
  kMode,     // octal
  kAtFlags,  // AT_* flags (AT_SYMLINK_NOFOLLOW, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH...)
};

// What a call works on, for the switches that treat a family alike.
enum class Family : uint8_t {
  kOther,
  kOpen,         // open, openat, openat2, creat
  kHandle,       // name_to_handle_at, open_by_handle_at
  kRead,         // read, pread64, readv, preadv, preadv2
  kWrite,        // write, pwrite64, writev, pwritev, pwritev2
  kData,         // the other calls on a file's bytes or size (lseek, copies, truncate...)
  kSync,         // fsync, fdatasync, sync, syncfs, sync_file_range, msync
  kStat,         // the stat calls and statfs
  kAttr,         // access, mode, owner, times
  kXattr,        // extended attributes
  kNames,        // directories and their names (getdents, mkdir, rename, link, readlink...)
  kCwd,          // chdir, fchdir, getcwd, chroot
  kDescriptors,  // close, dup, fcntl, flock
  kMemory,       // mmap
  kPrograms,     // execve, execveat
  kProcess,      // not a file call: named for --stats
};

// Whether a call with one path follows a symbolic link that the path ends in.
enum class LastLink : uint8_t {
  kNever,           // lstat, lchown, unlink, rename, mkdir, readlink... (and calls without paths)
  kFollows,         // stat, chmod, truncate, getxattr...
  kUnlessNoFollow,  // unless AT_SYMLINK_NOFOLLOW is in its kAtFlags argument
  kIfFollow,        // only with AT_SYMLINK_FOLLOW in its kAtFlags argument (linkat, handles)
};

struct SyscallInfo {
  long nr = -1;
  const char* name = nullptr;
  Arg args[6] = {};
  bool file = false;  // a file call: trapped by the filter, may be serviced by Amino
  Family family = Family::kOther;
  LastLink last_link = LastLink::kNever;
};

// A path argument of a call: its register, and the register of its directory descriptor
// (-1: relative to the cwd).
struct PathSlot {
  int arg = -1;
  int dirfd_arg = -1;
};

// nullptr for a number the table does not know.
const SyscallInfo* FindSyscall(long nr);
// Name for --stats and --trace ("syscall_NNN" when unknown).
const char* SyscallName(long nr);
// Every file call, for the seccomp filter.
std::vector<long> FileSyscalls();

// The path arguments of `info` in order (at most two: rename and link have two; the xattr name
// and a link's target are no paths). Returns how many.
int PathSlots(const SyscallInfo& info, PathSlot out[2]);
// The register of `info`'s kAtFlags argument, or -1.
int AtFlagsArg(const SyscallInfo& info);
// Whether the call, with these argument registers, follows its path's last link.
bool FollowsLastLink(const SyscallInfo& info, const uint64_t (&args)[6]);
// The family of call `nr` (kOther when the table does not know it).
Family FamilyOf(long nr);

// libamino's pseudo-calls (include/amino/amino.h): numbers no kernel gives a call, trapped and
// answered by the monitor.
constexpr bool IsLibaminoCall(long nr) {
  return nr >= AMINO_SYS_BASE && nr < AMINO_SYS_BASE + AMINO_SYS_COUNT;
}

}  // namespace amino::monitor
