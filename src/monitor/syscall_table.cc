#include "monitor/syscall_table.h"

#include <fcntl.h>
#include <sys/syscall.h>

#include <array>
#include <string>
#include <unordered_map>

#include "monitor/syscall_numbers.h"

namespace amino::monitor {
namespace {

using A = Arg;
constexpr A N = A::kNone, I = A::kInt, U = A::kUint, X = A::kHex, F = A::kFd, D = A::kDirFd,
            P = A::kPath, XN = A::kXattrName, LT = A::kLinkTarget, B = A::kBuf, O = A::kOpenFlags,
            M = A::kMode, T = A::kAtFlags;

// clang-format off
const SyscallInfo kTable[] = {
    // Opening and closing.
    {SYS_open, "open", {P, O, M}, true, Family::kOpen},
    {SYS_openat, "openat", {D, P, O, M}, true, Family::kOpen},
    {SYS_openat2, "openat2", {D, P, X, U}, true, Family::kOpen},
    {SYS_creat, "creat", {P, M}, true, Family::kOpen},
    {SYS_close, "close", {F}, true, Family::kDescriptors},
    {SYS_close_range, "close_range", {U, U, X}, true, Family::kDescriptors},
    {SYS_name_to_handle_at, "name_to_handle_at", {D, P, X, X, T}, true, Family::kHandle, LastLink::kIfFollow},
    {SYS_open_by_handle_at, "open_by_handle_at", {F, X, O}, true, Family::kHandle},
    // Data.
    {SYS_read, "read", {F, B, U}, true, Family::kRead},
    {SYS_write, "write", {F, B, U}, true, Family::kWrite},
    {SYS_pread64, "pread64", {F, B, U, I}, true, Family::kRead},
    {SYS_pwrite64, "pwrite64", {F, B, U, I}, true, Family::kWrite},
    {SYS_readv, "readv", {F, X, I}, true, Family::kRead},
    {SYS_writev, "writev", {F, X, I}, true, Family::kWrite},
    {SYS_preadv, "preadv", {F, X, I, I}, true, Family::kRead},
    {SYS_pwritev, "pwritev", {F, X, I, I}, true, Family::kWrite},
    {SYS_preadv2, "preadv2", {F, X, I, I, X}, true, Family::kRead},
    {SYS_pwritev2, "pwritev2", {F, X, I, I, X}, true, Family::kWrite},
    {SYS_lseek, "lseek", {F, I, I}, true, Family::kData},
    {SYS_sendfile, "sendfile", {F, F, X, U}, true, Family::kData},
    {SYS_copy_file_range, "copy_file_range", {F, X, F, X, U, X}, true, Family::kData},
    {SYS_splice, "splice", {F, X, F, X, U, X}, true, Family::kData},
    {SYS_tee, "tee", {F, F, U, X}, true, Family::kData},
    {SYS_ftruncate, "ftruncate", {F, I}, true, Family::kData},
    {SYS_truncate, "truncate", {P, I}, true, Family::kData, LastLink::kFollows},
    {SYS_fallocate, "fallocate", {F, X, I, I}, true, Family::kData},
    {SYS_fadvise64, "fadvise64", {F, I, I, I}, true, Family::kData},
    {SYS_readahead, "readahead", {F, I, U}, true, Family::kData},
    {SYS_fsync, "fsync", {F}, true, Family::kSync},
    {SYS_fdatasync, "fdatasync", {F}, true, Family::kSync},
    {SYS_sync, "sync", {}, true, Family::kSync},
    {SYS_syncfs, "syncfs", {F}, true, Family::kSync},
    {SYS_sync_file_range, "sync_file_range", {F, I, I, X}, true, Family::kSync},
    {SYS_mmap, "mmap", {X, U, X, X, F, I}, true, Family::kMemory},
    {SYS_msync, "msync", {X, U, X}, true, Family::kSync},
    // Attributes.
    {SYS_stat, "stat", {P, B}, true, Family::kStat, LastLink::kFollows},
    {SYS_lstat, "lstat", {P, B}, true, Family::kStat},
    {SYS_fstat, "fstat", {F, B}, true, Family::kStat},
    {SYS_newfstatat, "newfstatat", {D, P, B, T}, true, Family::kStat, LastLink::kUnlessNoFollow},
    {SYS_statx, "statx", {D, P, T, X, B}, true, Family::kStat, LastLink::kUnlessNoFollow},
    {SYS_statfs, "statfs", {P, B}, true, Family::kStat, LastLink::kFollows},
    {SYS_fstatfs, "fstatfs", {F, B}, true, Family::kStat},
    {SYS_access, "access", {P, I}, true, Family::kAttr, LastLink::kFollows},
    {SYS_faccessat, "faccessat", {D, P, I}, true, Family::kAttr, LastLink::kFollows},
    {SYS_faccessat2, "faccessat2", {D, P, I, T}, true, Family::kAttr, LastLink::kUnlessNoFollow},
    {SYS_chmod, "chmod", {P, M}, true, Family::kAttr, LastLink::kFollows},
    {SYS_fchmod, "fchmod", {F, M}, true, Family::kAttr},
    {SYS_fchmodat, "fchmodat", {D, P, M}, true, Family::kAttr, LastLink::kFollows},
    {SYS_fchmodat2, "fchmodat2", {D, P, M, T}, true, Family::kAttr, LastLink::kUnlessNoFollow},
    {SYS_chown, "chown", {P, I, I}, true, Family::kAttr, LastLink::kFollows},
    {SYS_fchown, "fchown", {F, I, I}, true, Family::kAttr},
    {SYS_lchown, "lchown", {P, I, I}, true, Family::kAttr},
    {SYS_fchownat, "fchownat", {D, P, I, I, T}, true, Family::kAttr, LastLink::kUnlessNoFollow},
    {SYS_utime, "utime", {P, X}, true, Family::kAttr, LastLink::kFollows},
    {SYS_utimes, "utimes", {P, X}, true, Family::kAttr, LastLink::kFollows},
    {SYS_futimesat, "futimesat", {D, P, X}, true, Family::kAttr, LastLink::kFollows},
    {SYS_utimensat, "utimensat", {D, P, X, T}, true, Family::kAttr, LastLink::kUnlessNoFollow},
    {SYS_setxattr, "setxattr", {P, XN, B, U, X}, true, Family::kXattr, LastLink::kFollows},
    {SYS_lsetxattr, "lsetxattr", {P, XN, B, U, X}, true, Family::kXattr},
    {SYS_fsetxattr, "fsetxattr", {F, XN, B, U, X}, true, Family::kXattr},
    {SYS_getxattr, "getxattr", {P, XN, B, U}, true, Family::kXattr, LastLink::kFollows},
    {SYS_lgetxattr, "lgetxattr", {P, XN, B, U}, true, Family::kXattr},
    {SYS_fgetxattr, "fgetxattr", {F, XN, B, U}, true, Family::kXattr},
    {SYS_listxattr, "listxattr", {P, B, U}, true, Family::kXattr, LastLink::kFollows},
    {SYS_llistxattr, "llistxattr", {P, B, U}, true, Family::kXattr},
    {SYS_flistxattr, "flistxattr", {F, B, U}, true, Family::kXattr},
    {SYS_removexattr, "removexattr", {P, XN}, true, Family::kXattr, LastLink::kFollows},
    {SYS_lremovexattr, "lremovexattr", {P, XN}, true, Family::kXattr},
    {SYS_fremovexattr, "fremovexattr", {F, XN}, true, Family::kXattr},
    // Names.
    {SYS_getdents, "getdents", {F, B, U}, true, Family::kNames},
    {SYS_getdents64, "getdents64", {F, B, U}, true, Family::kNames},
    {SYS_mkdir, "mkdir", {P, M}, true, Family::kNames},
    {SYS_mkdirat, "mkdirat", {D, P, M}, true, Family::kNames},
    {SYS_mknod, "mknod", {P, M, X}, true, Family::kNames},
    {SYS_mknodat, "mknodat", {D, P, M, X}, true, Family::kNames},
    {SYS_rmdir, "rmdir", {P}, true, Family::kNames},
    {SYS_unlink, "unlink", {P}, true, Family::kNames},
    {SYS_unlinkat, "unlinkat", {D, P, T}, true, Family::kNames},
    {SYS_rename, "rename", {P, P}, true, Family::kNames},
    {SYS_renameat, "renameat", {D, P, D, P}, true, Family::kNames},
    {SYS_renameat2, "renameat2", {D, P, D, P, X}, true, Family::kNames},
    {SYS_link, "link", {P, P}, true, Family::kNames},
    {SYS_linkat, "linkat", {D, P, D, P, T}, true, Family::kNames, LastLink::kIfFollow},
    {SYS_symlink, "symlink", {LT, P}, true, Family::kNames},
    {SYS_symlinkat, "symlinkat", {LT, D, P}, true, Family::kNames},
    {SYS_readlink, "readlink", {P, B, U}, true, Family::kNames},
    {SYS_readlinkat, "readlinkat", {D, P, B, U}, true, Family::kNames},
    {SYS_chdir, "chdir", {P}, true, Family::kCwd, LastLink::kFollows},
    {SYS_fchdir, "fchdir", {F}, true, Family::kCwd},
    {SYS_getcwd, "getcwd", {B, U}, true, Family::kCwd},
    {SYS_chroot, "chroot", {P}, true, Family::kCwd, LastLink::kFollows},
    // Descriptors.
    {SYS_dup, "dup", {F}, true, Family::kDescriptors},
    {SYS_dup2, "dup2", {F, F}, true, Family::kDescriptors},
    {SYS_dup3, "dup3", {F, F, X}, true, Family::kDescriptors},
    {SYS_fcntl, "fcntl", {F, I, X}, true, Family::kDescriptors},
    {SYS_flock, "flock", {F, I}, true, Family::kDescriptors},
    // Programs.
    {SYS_execve, "execve", {P, X, X}, true, Family::kPrograms, LastLink::kFollows},
    {SYS_execveat, "execveat", {D, P, X, X, T}, true, Family::kPrograms, LastLink::kUnlessNoFollow},
    // Not file calls; named for --stats.
    {SYS_clone, "clone", {X, X, X, X, X}, false, Family::kProcess},
    {SYS_clone3, "clone3", {X, U}, false, Family::kProcess},
    {SYS_fork, "fork", {}, false, Family::kProcess},
    {SYS_vfork, "vfork", {}, false, Family::kProcess},
    {SYS_exit, "exit", {I}, false, Family::kProcess},
    {SYS_exit_group, "exit_group", {I}, false, Family::kProcess},
    {SYS_getppid, "getppid", {}, false, Family::kProcess},
    {SYS_getpid, "getpid", {}, false, Family::kProcess},
    {SYS_ioctl, "ioctl", {F, X, X}, false, Family::kProcess},
    {SYS_munmap, "munmap", {X, U}, false, Family::kProcess},
    {SYS_wait4, "wait4", {I, X, X, X}, false, Family::kProcess},
    {SYS_nanosleep, "nanosleep", {X, X}, false, Family::kProcess},
};
// clang-format on

const std::unordered_map<long, const SyscallInfo*>& Index() {
  static const auto* index = [] {
    auto* m = new std::unordered_map<long, const SyscallInfo*>();
    for (const SyscallInfo& s : kTable) m->emplace(s.nr, &s);
    return m;
  }();
  return *index;
}

}  // namespace

const SyscallInfo* FindSyscall(long nr) {
  auto it = Index().find(nr);
  return it == Index().end() ? nullptr : it->second;
}

const char* SyscallName(long nr) {
  if (const SyscallInfo* s = FindSyscall(nr)) return s->name;
  thread_local std::string name;
  name = "syscall_" + std::to_string(nr);
  return name.c_str();
}

int PathSlots(const SyscallInfo& info, PathSlot out[2]) {
  int n = 0;
  for (int i = 0; i < 6 && n < 2; ++i) {
    if (info.args[i] != Arg::kPath) continue;
    out[n].arg = i;
    out[n].dirfd_arg = i > 0 && info.args[i - 1] == Arg::kDirFd ? i - 1 : -1;
    ++n;
  }
  return n;
}

int AtFlagsArg(const SyscallInfo& info) {
  for (int i = 0; i < 6; ++i) {
    if (info.args[i] == Arg::kAtFlags) return i;
  }
  return -1;
}

bool FollowsLastLink(const SyscallInfo& info, const uint64_t (&args)[6]) {
  const int at = AtFlagsArg(info);
  const uint64_t flags = at >= 0 ? args[at] : 0;
  switch (info.last_link) {
    case LastLink::kNever:
      return false;
    case LastLink::kFollows:
      return true;
    case LastLink::kUnlessNoFollow:
      return !(flags & AT_SYMLINK_NOFOLLOW);
    case LastLink::kIfFollow:
      return (flags & AT_SYMLINK_FOLLOW) != 0;
  }
  return false;
}

Family FamilyOf(long nr) {
  const SyscallInfo* info = FindSyscall(nr);
  return info ? info->family : Family::kOther;
}

std::vector<long> FileSyscalls() {
  std::vector<long> out;
  for (const SyscallInfo& s : kTable) {
    if (s.file) out.push_back(s.nr);
  }
  return out;
}

}  // namespace amino::monitor
