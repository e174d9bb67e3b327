#include "monitor/syscall_table.h"

#include <sys/syscall.h>

#include <array>
#include <string>
#include <unordered_map>

#include "monitor/syscall_numbers.h"

namespace amino::monitor {
namespace {

using A = Arg;
constexpr A N = A::kNone, I = A::kInt, U = A::kUint, X = A::kHex, F = A::kFd, D = A::kDirFd,
            P = A::kPath, B = A::kBuf, O = A::kOpenFlags, M = A::kMode, T = A::kAtFlags;

// clang-format off
const SyscallInfo kTable[] = {
    // Opening and closing.
    {SYS_open, "open", {P, O, M}, true},
    {SYS_openat, "openat", {D, P, O, M}, true},
    {SYS_openat2, "openat2", {D, P, X, U}, true},
    {SYS_creat, "creat", {P, M}, true},
    {SYS_close, "close", {F}, true},
    {SYS_close_range, "close_range", {U, U, X}, true},
    {SYS_name_to_handle_at, "name_to_handle_at", {D, P, X, X, T}, true},
    {SYS_open_by_handle_at, "open_by_handle_at", {F, X, O}, true},
    // Data.
    {SYS_read, "read", {F, B, U}, true},
    {SYS_write, "write", {F, B, U}, true},
    {SYS_pread64, "pread64", {F, B, U, I}, true},
    {SYS_pwrite64, "pwrite64", {F, B, U, I}, true},
    {SYS_readv, "readv", {F, X, I}, true},
    {SYS_writev, "writev", {F, X, I}, true},
    {SYS_preadv, "preadv", {F, X, I, I}, true},
    {SYS_pwritev, "pwritev", {F, X, I, I}, true},
    {SYS_preadv2, "preadv2", {F, X, I, I, X}, true},
    {SYS_pwritev2, "pwritev2", {F, X, I, I, X}, true},
    {SYS_lseek, "lseek", {F, I, I}, true},
    {SYS_sendfile, "sendfile", {F, F, X, U}, true},
    {SYS_copy_file_range, "copy_file_range", {F, X, F, X, U, X}, true},
    {SYS_splice, "splice", {F, X, F, X, U, X}, true},
    {SYS_tee, "tee", {F, F, U, X}, true},
    {SYS_ftruncate, "ftruncate", {F, I}, true},
    {SYS_truncate, "truncate", {P, I}, true},
    {SYS_fallocate, "fallocate", {F, X, I, I}, true},
    {SYS_fadvise64, "fadvise64", {F, I, I, I}, true},
    {SYS_readahead, "readahead", {F, I, U}, true},
    {SYS_fsync, "fsync", {F}, true},
    {SYS_fdatasync, "fdatasync", {F}, true},
    {SYS_sync, "sync", {}, true},
    {SYS_syncfs, "syncfs", {F}, true},
    {SYS_sync_file_range, "sync_file_range", {F, I, I, X}, true},
    {SYS_mmap, "mmap", {X, U, X, X, F, I}, true},
    {SYS_msync, "msync", {X, U, X}, true},
    // Attributes.
    {SYS_stat, "stat", {P, B}, true},
    {SYS_lstat, "lstat", {P, B}, true},
    {SYS_fstat, "fstat", {F, B}, true},
    {SYS_newfstatat, "newfstatat", {D, P, B, T}, true},
    {SYS_statx, "statx", {D, P, T, X, B}, true},
    {SYS_statfs, "statfs", {P, B}, true},
    {SYS_fstatfs, "fstatfs", {F, B}, true},
    {SYS_access, "access", {P, I}, true},
    {SYS_faccessat, "faccessat", {D, P, I}, true},
    {SYS_faccessat2, "faccessat2", {D, P, I, T}, true},
    {SYS_chmod, "chmod", {P, M}, true},
    {SYS_fchmod, "fchmod", {F, M}, true},
    {SYS_fchmodat, "fchmodat", {D, P, M}, true},
    {SYS_fchmodat2, "fchmodat2", {D, P, M, T}, true},
    {SYS_chown, "chown", {P, I, I}, true},
    {SYS_fchown, "fchown", {F, I, I}, true},
    {SYS_lchown, "lchown", {P, I, I}, true},
    {SYS_fchownat, "fchownat", {D, P, I, I, T}, true},
    {SYS_utime, "utime", {P, X}, true},
    {SYS_utimes, "utimes", {P, X}, true},
    {SYS_futimesat, "futimesat", {D, P, X}, true},
    {SYS_utimensat, "utimensat", {D, P, X, T}, true},
    {SYS_setxattr, "setxattr", {P, P, B, U, X}, true},
    {SYS_lsetxattr, "lsetxattr", {P, P, B, U, X}, true},
    {SYS_fsetxattr, "fsetxattr", {F, P, B, U, X}, true},
    {SYS_getxattr, "getxattr", {P, P, B, U}, true},
    {SYS_lgetxattr, "lgetxattr", {P, P, B, U}, true},
    {SYS_fgetxattr, "fgetxattr", {F, P, B, U}, true},
    {SYS_listxattr, "listxattr", {P, B, U}, true},
    {SYS_llistxattr, "llistxattr", {P, B, U}, true},
    {SYS_flistxattr, "flistxattr", {F, B, U}, true},
    {SYS_removexattr, "removexattr", {P, P}, true},
    {SYS_lremovexattr, "lremovexattr", {P, P}, true},
    {SYS_fremovexattr, "fremovexattr", {F, P}, true},
    // Names.
    {SYS_getdents, "getdents", {F, B, U}, true},
    {SYS_getdents64, "getdents64", {F, B, U}, true},
    {SYS_mkdir, "mkdir", {P, M}, true},
    {SYS_mkdirat, "mkdirat", {D, P, M}, true},
    {SYS_mknod, "mknod", {P, M, X}, true},
    {SYS_mknodat, "mknodat", {D, P, M, X}, true},
    {SYS_rmdir, "rmdir", {P}, true},
    {SYS_unlink, "unlink", {P}, true},
    {SYS_unlinkat, "unlinkat", {D, P, T}, true},
    {SYS_rename, "rename", {P, P}, true},
    {SYS_renameat, "renameat", {D, P, D, P}, true},
    {SYS_renameat2, "renameat2", {D, P, D, P, X}, true},
    {SYS_link, "link", {P, P}, true},
    {SYS_linkat, "linkat", {D, P, D, P, T}, true},
    {SYS_symlink, "symlink", {P, P}, true},
    {SYS_symlinkat, "symlinkat", {P, D, P}, true},
    {SYS_readlink, "readlink", {P, B, U}, true},
    {SYS_readlinkat, "readlinkat", {D, P, B, U}, true},
    {SYS_chdir, "chdir", {P}, true},
    {SYS_fchdir, "fchdir", {F}, true},
    {SYS_getcwd, "getcwd", {B, U}, true},
    {SYS_chroot, "chroot", {P}, true},
    // Descriptors.
    {SYS_dup, "dup", {F}, true},
    {SYS_dup2, "dup2", {F, F}, true},
    {SYS_dup3, "dup3", {F, F, X}, true},
    {SYS_fcntl, "fcntl", {F, I, X}, true},
    {SYS_flock, "flock", {F, I}, true},
    // Programs.
    {SYS_execve, "execve", {P, X, X}, true},
    {SYS_execveat, "execveat", {D, P, X, X, T}, true},
    // Not file calls; named for --stats.
    {SYS_clone, "clone", {X, X, X, X, X}, false},
    {SYS_clone3, "clone3", {X, U}, false},
    {SYS_fork, "fork", {}, false},
    {SYS_vfork, "vfork", {}, false},
    {SYS_exit, "exit", {I}, false},
    {SYS_exit_group, "exit_group", {I}, false},
    {SYS_getppid, "getppid", {}, false},
    {SYS_getpid, "getpid", {}, false},
    {SYS_ioctl, "ioctl", {F, X, X}, false},
    {SYS_munmap, "munmap", {X, U}, false},
    {SYS_wait4, "wait4", {I, X, X, X}, false},
    {SYS_nanosleep, "nanosleep", {X, X}, false},
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

std::vector<long> FileSyscalls() {
  std::vector<long> out;
  for (const SyscallInfo& s : kTable) {
    if (s.file) out.push_back(s.nr);
  }
  return out;
}

}  // namespace amino::monitor
