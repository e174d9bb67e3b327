// Calls that name a file by path (and the *xattr calls of every form): the same call made by the
// monitor, with the tracee's credentials, relative to the tracee's cwd or directory descriptor.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include <cerrno>
#include <vector>

#include "monitor/host/host_handler.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::host {

namespace {

constexpr uint64_t kCapMknod = 1ull << 27;
constexpr uint64_t kCapSysAdmin = 1ull << 21;

long Result(long r) { return r < 0 ? -errno : r; }

// One path argument of the call, resolved for the monitor's *at call.
struct PathArg {
  std::string path;
  int dirfd = AT_FDCWD;
  ScopedFd holder;
};

template <typename T>
long CopyOut(Thread& t, uint64_t addr, const T& v, long r) {
  if (r < 0) return r;
  return WriteMemory(*t.proc, addr, &v, sizeof v) == 0 ? r : -EFAULT;
}

long XattrName(Thread& t, uint64_t addr, std::string* name) {
  int err = ReadString(*t.proc, addr, XATTR_NAME_MAX + 1, name);
  if (err == ENAMETOOLONG || (err == 0 && name->empty())) return -ERANGE;
  return err ? -err : 0;
}

}  // namespace

Decision HostHandler::PathCall(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  const SyscallInfo* info = FindSyscall(nr);
  if (!info) return Decision::Pass();
  // Gather the path arguments: each kPath that follows a kDirFd uses it; others use the cwd.
  PathArg paths[2];
  int npaths = 0;
  int fd_arg = -1;  // f*xattr: the descriptor
  for (int i = 0; i < 6 && info->args[i] != Arg::kNone; ++i) {
    if (info->args[i] == Arg::kFd && i == 0) fd_arg = static_cast<int>(call.arg(0));
    if (info->args[i] != Arg::kPath) continue;
    // The xattr name and symlink target are strings, not paths to resolve.
    const bool is_name =
        (nr == SYS_setxattr || nr == SYS_lsetxattr || nr == SYS_fsetxattr || nr == SYS_getxattr ||
         nr == SYS_lgetxattr || nr == SYS_fgetxattr || nr == SYS_removexattr ||
         nr == SYS_lremovexattr || nr == SYS_fremovexattr) &&
        i == 1;
    const bool is_target = (nr == SYS_symlink || nr == SYS_symlinkat) && i == 0;
    if (is_name || is_target) continue;
    if (npaths == 2) break;
    PathArg& p = paths[npaths++];
    const uint64_t addr = call.arg(i);
    // utimensat(fd, NULL, ...) is futimens: the descriptor itself.
    if (addr == 0 && nr == SYS_utimensat) {
      p.dirfd = -1;
      continue;
    }
    bool via_shadow;
    if (int err = ReadPath(t, addr, &p.path, &via_shadow, table_)) return Decision::Emulate(-err);
    if (!via_shadow && IsKernelPath(p.path)) return Decision::Pass();
    int dirfd =
        i > 0 && info->args[i - 1] == Arg::kDirFd ? static_cast<int>(call.arg(i - 1)) : AT_FDCWD;
    int dfd = ResolveDirFd(t, dirfd, p.path, p.holder);
    if (dfd < 0 && dfd != AT_FDCWD) return Decision::Emulate(dfd);
    p.dirfd = dfd;
  }
  const Creds& c = CredsOf(t);
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3), a4 = call.arg(4);
  auto P = [&](int i) { return paths[i].path.c_str(); };
  auto D = [&](int i) { return paths[i].dirfd; };
  long r;
  switch (nr) {
    case SYS_stat:
    case SYS_lstat: {
      struct stat st;
      AsTracee as(c);
      r = Result(fstatat(D(0), P(0), &st, nr == SYS_lstat ? AT_SYMLINK_NOFOLLOW : 0));
      return Decision::Emulate(CopyOut(t, a1, st, r));
    }
    case SYS_newfstatat: {
      struct stat st;
      AsTracee as(c);
      r = Result(fstatat(D(0), P(0), &st, static_cast<int>(a3)));
      return Decision::Emulate(CopyOut(t, a2, st, r));
    }
    case SYS_statx: {
      struct statx sx;
      AsTracee as(c);
      r = Result(statx(D(0), P(0), static_cast<int>(a2), static_cast<unsigned>(a3), &sx));
      return Decision::Emulate(CopyOut(t, a4, sx, r));
    }
    case SYS_statfs: {
      struct statfs sf;
      AsTracee as(c);
      ScopedFd f(openat(D(0), P(0), O_PATH | O_CLOEXEC));
      r = f.get() < 0 ? -errno : Result(fstatfs(f.get(), &sf));
      return Decision::Emulate(CopyOut(t, a1, sf, r));
    }
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2: {
      const int mode = static_cast<int>(nr == SYS_access ? a1 : a2);
      const int flags = nr == SYS_faccessat2 ? static_cast<int>(a3) : 0;
      // Without AT_EACCESS the real ids are checked, as access(2) does.
      AsTracee as(c, !(flags & AT_EACCESS));
      return Decision::Emulate(Result(faccessat(D(0), P(0), mode, flags | AT_EACCESS)));
    }
    case SYS_chmod:
    case SYS_fchmodat: {
      AsTracee as(c);
      return Decision::Emulate(
          Result(fchmodat(D(0), P(0), static_cast<mode_t>(nr == SYS_chmod ? a1 : a2), 0)));
    }
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat: {
      AsTracee as(c);
      if (nr == SYS_fchownat) {
        return Decision::Emulate(Result(fchownat(D(0), P(0), static_cast<uid_t>(a2),
                                                 static_cast<gid_t>(a3), static_cast<int>(a4))));
      }
      return Decision::Emulate(
          Result(fchownat(D(0), P(0), static_cast<uid_t>(a1), static_cast<gid_t>(a2),
                          nr == SYS_lchown ? AT_SYMLINK_NOFOLLOW : 0)));
    }
    case SYS_utime:
    case SYS_utimes:
    case SYS_futimesat:
    case SYS_utimensat: {
      timespec ts[2];
      timespec* times = nullptr;
      const uint64_t tp = nr == SYS_utime || nr == SYS_utimes ? a1 : a2;
      if (tp) {
        times = ts;
        if (nr == SYS_utime) {
          utimbuf u;
          if (ReadMemory(*t.proc, tp, &u, sizeof u) != 0) return Decision::Emulate(-EFAULT);
          ts[0] = {u.actime, 0};
          ts[1] = {u.modtime, 0};
        } else if (nr == SYS_utimensat) {
          if (ReadMemory(*t.proc, tp, ts, sizeof ts) != 0) return Decision::Emulate(-EFAULT);
        } else {
          timeval tv[2];
          if (ReadMemory(*t.proc, tp, tv, sizeof tv) != 0) return Decision::Emulate(-EFAULT);
          for (int i = 0; i < 2; ++i) {
            if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return Decision::Emulate(-EINVAL);
            ts[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
          }
        }
      }
      AsTracee as(c);
      if (nr == SYS_utimensat && paths[0].dirfd == -1) {
        // futimens: the descriptor is the first argument.
        std::shared_ptr<HostFile> f = ShadowOf(t, static_cast<int>(call.arg(0)));
        if (!f) return Decision::Pass();
        return Decision::Emulate(Result(futimens(f->fd, times)));
      }
      const int flags = nr == SYS_utimensat ? static_cast<int>(a3) : 0;
      return Decision::Emulate(Result(utimensat(D(0), P(0), times, flags)));
    }
    case SYS_mkdir:
    case SYS_mkdirat: {
      const mode_t mode = static_cast<mode_t>(nr == SYS_mkdir ? a1 : a2);
      AsTracee as(c);
      return Decision::Emulate(Result(mkdirat(D(0), P(0), mode & ~c.umask & 07777)));
    }
    case SYS_mknod:
    case SYS_mknodat: {
      const mode_t mode = static_cast<mode_t>(nr == SYS_mknod ? a1 : a2);
      const dev_t dev = static_cast<dev_t>(nr == SYS_mknod ? a2 : a3);
      if ((S_ISCHR(mode) || S_ISBLK(mode)) && !(c.cap_effective & kCapMknod)) {
        return Decision::Emulate(-EPERM);  // the monitor's CAP_MKNOD is not the tracee's
      }
      AsTracee as(c);
      return Decision::Emulate(
          Result(mknodat(D(0), P(0), (mode & ~c.umask) | (mode & S_IFMT), dev)));
    }
    case SYS_rmdir: {
      AsTracee as(c);
      return Decision::Emulate(Result(unlinkat(D(0), P(0), AT_REMOVEDIR)));
    }
    case SYS_unlink:
    case SYS_unlinkat: {
      AsTracee as(c);
      return Decision::Emulate(
          Result(unlinkat(D(0), P(0), nr == SYS_unlink ? 0 : static_cast<int>(a2))));
    }
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2: {
      AsTracee as(c);
      const unsigned flags = nr == SYS_renameat2 ? static_cast<unsigned>(a4) : 0;
      return Decision::Emulate(Result(renameat2(D(0), P(0), D(1), P(1), flags)));
    }
    case SYS_link:
    case SYS_linkat: {
      AsTracee as(c);
      const int flags = nr == SYS_linkat ? static_cast<int>(a4) : 0;
      return Decision::Emulate(Result(linkat(D(0), P(0), D(1), P(1), flags)));
    }
    case SYS_symlink:
    case SYS_symlinkat: {
      std::string target;
      if (int err = ReadString(*t.proc, call.arg(0), 4096, &target)) return Decision::Emulate(-err);
      AsTracee as(c);
      return Decision::Emulate(Result(symlinkat(target.c_str(), D(0), P(0))));
    }
    case SYS_readlink:
    case SYS_readlinkat: {
      const uint64_t buf = nr == SYS_readlink ? a1 : a2;
      const int64_t size = static_cast<int64_t>(nr == SYS_readlink ? a2 : a3);
      if (size <= 0) return Decision::Emulate(-EINVAL);
      std::vector<char> out(static_cast<size_t>(std::min<int64_t>(size, 65536)));
      AsTracee as(c);
      r = Result(readlinkat(D(0), P(0), out.data(), out.size()));
      if (r > 0 && WriteMemory(*t.proc, buf, out.data(), static_cast<size_t>(r)) != 0) r = -EFAULT;
      return Decision::Emulate(r);
    }
    case SYS_truncate: {
      AsTracee as(c);
      return Decision::Emulate(Result(truncate(P(0), static_cast<off_t>(a1))));
    }
    default:
      break;
  }
  // Extended attributes: path, l-path and descriptor forms share the work.
  const bool by_fd =
      nr == SYS_fsetxattr || nr == SYS_fgetxattr || nr == SYS_flistxattr || nr == SYS_fremovexattr;
  const bool nofollow =
      nr == SYS_lsetxattr || nr == SYS_lgetxattr || nr == SYS_llistxattr || nr == SYS_lremovexattr;
  std::shared_ptr<HostFile> shadow = by_fd ? ShadowOf(t, fd_arg) : nullptr;
  if (by_fd && !shadow) return Decision::Pass();
  ScopedFd target;
  if (!by_fd) {
    AsTracee as(c);
    target.reset(openat(D(0), P(0), O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0)));
    if (target.get() < 0) {
      // A symbolic link itself (l*xattr): O_PATH|O_NOFOLLOW opens it; errors are the lookup's.
      return Decision::Emulate(-errno);
    }
  }
  // *xattr on an O_PATH descriptor goes through /proc/self/fd: following that magic link lands
  // on the descriptor's own file (the symbolic link itself for the l* forms).
  const std::string via = "/proc/self/fd/" + std::to_string(by_fd ? shadow->fd : target.get());
  const int fd = by_fd ? shadow->fd : -1;
  auto name_of = [&](std::string* name) { return XattrName(t, call.arg(1), name); };
  AsTracee as(c);
  switch (nr) {
    case SYS_setxattr:
    case SYS_lsetxattr:
    case SYS_fsetxattr: {
      std::string name;
      if ((r = name_of(&name)) < 0) return Decision::Emulate(r);
      if (name.substr(0, 8) == "trusted." && !(c.cap_effective & kCapSysAdmin)) {
        return Decision::Emulate(-EPERM);
      }
      if (a3 > XATTR_SIZE_MAX) return Decision::Emulate(-E2BIG);
      std::vector<char> value(a3);
      if (a3 && ReadMemory(*t.proc, a2, value.data(), a3) != 0) return Decision::Emulate(-EFAULT);
      r = fd >= 0 ? fsetxattr(fd, name.c_str(), value.data(), a3, static_cast<int>(a4))
                  : setxattr(via.c_str(), name.c_str(), value.data(), a3, static_cast<int>(a4));
      return Decision::Emulate(Result(r));
    }
    case SYS_getxattr:
    case SYS_lgetxattr:
    case SYS_fgetxattr: {
      std::string name;
      if ((r = name_of(&name)) < 0) return Decision::Emulate(r);
      if (name.substr(0, 8) == "trusted." && !(c.cap_effective & kCapSysAdmin)) {
        return Decision::Emulate(-ENODATA);
      }
      std::vector<char> value(std::min<uint64_t>(a3, XATTR_SIZE_MAX));
      r = fd >= 0 ? fgetxattr(fd, name.c_str(), value.data(), value.size())
                  : getxattr(via.c_str(), name.c_str(), value.data(), value.size());
      r = Result(r);
      if (r > 0 && a3 && WriteMemory(*t.proc, a2, value.data(), static_cast<size_t>(r)) != 0) {
        r = -EFAULT;
      }
      return Decision::Emulate(r);
    }
    case SYS_listxattr:
    case SYS_llistxattr:
    case SYS_flistxattr: {
      std::vector<char> list(std::min<uint64_t>(a2, XATTR_LIST_MAX));
      r = fd >= 0 ? flistxattr(fd, list.data(), list.size())
                  : listxattr(via.c_str(), list.data(), list.size());
      r = Result(r);
      if (r > 0 && a2 && WriteMemory(*t.proc, a1, list.data(), static_cast<size_t>(r)) != 0) {
        r = -EFAULT;
      }
      return Decision::Emulate(r);
    }
    case SYS_removexattr:
    case SYS_lremovexattr:
    case SYS_fremovexattr: {
      std::string name;
      if ((r = name_of(&name)) < 0) return Decision::Emulate(r);
      r = fd >= 0 ? fremovexattr(fd, name.c_str()) : removexattr(via.c_str(), name.c_str());
      return Decision::Emulate(Result(r));
    }
    default:
      return Decision::Pass();
  }
}

}  // namespace amino::monitor::host
