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

#include <algorithm>
#include <array>
#include <cerrno>
#include <vector>

#include "monitor/calls/validate.h"
#include "monitor/host/host_handler.h"
#include "monitor/path_call_decoder.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::host {

namespace {

constexpr uint64_t kCapDacReadSearch = 1ull << 2;

long Result(long r) { return r < 0 ? -errno : r; }

// One path argument of the call as the monitor's *at call takes it: a directory descriptor of
// the monitor's (held open by `holder` when the monitor opened it) and the path from there.
struct AtPath {
  std::string path;
  int dirfd = AT_FDCWD;
  ScopedFd holder;
};

template <typename T>
long CopyOut(Thread& t, uint64_t addr, const T& v, long r) {
  if (r < 0) return r;
  return WriteMemory(*t.proc, addr, &v, sizeof v) == 0 ? r : -EFAULT;
}

// The error of the walk the kernel makes on the first path of a two-path call before it looks
// at the second path or its directory: link follows the whole old path; rename walks to the
// old path's parent (search permission on every directory on the way). 0 if it succeeds.
long FirstPathError(long nr, const AtPath& p, unsigned link_flags, const Creds& c) {
  AsTracee as(c);
  if (nr == SYS_link || nr == SYS_linkat) {
    if (p.path.empty()) return 0;  // AT_EMPTY_PATH: the descriptor itself
    struct stat st;
    const int follow = (link_flags & AT_SYMLINK_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW;
    return fstatat(p.dirfd, p.path.c_str(), &st, follow) == 0 ? 0 : -errno;
  }
  std::string parent = p.path;
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  const size_t slash = parent.rfind('/');
  // "dir/." walks dir and needs search permission in it, as the walk to the last component.
  parent = slash == std::string::npos ? "." : parent.substr(0, slash + 1) + ".";
  ScopedFd fd(openat(p.dirfd, parent.c_str(), O_PATH | O_CLOEXEC));
  return fd.get() < 0 ? -errno : 0;
}

// One path call being made by the monitor: the call as decoded (path_call_decoder.h), and its
// paths, each resolved to a directory descriptor of the monitor's.
struct HostPathCall {
  Thread& t;
  SyscallRegs& call;
  const long nr;
  const SyscallInfo& info;
  const Creds& c;
  const uint64_t a1, a2, a3, a4;
  DecodedPathCall decoded;
  const PathExtras& x = decoded.extras;
  std::shared_ptr<HostFile> xattr_shadow;  // the descriptor of the f*xattr calls
  AtPath paths[2];

  HostPathCall(Thread& thread, SyscallRegs& regs, const SyscallInfo& call_info, const Creds& creds)
      : t(thread),
        call(regs),
        nr(regs.nr()),
        info(call_info),
        c(creds),
        a1(regs.arg(1)),
        a2(regs.arg(2)),
        a3(regs.arg(3)),
        a4(regs.arg(4)) {}
  const char* P(int i) const { return paths[i].path.c_str(); }
  int D(int i) const { return paths[i].dirfd; }
  // The times the call sets (nullptr: now).
  const timespec* times() const { return x.has_times ? x.times : nullptr; }
  // Each decoded path made an AtPath, in the kernel's order of errors: nullopt when all are.
  // `instead`: paths under /proc, /sys and /dev are the monitor's too.
  std::optional<Decision> ResolvePaths(ProcessTable* table, bool instead);
  // By family, once the paths are resolved.
  Decision Stats();
  Decision Attributes();
  Decision Names();
  Decision Xattrs();
};

std::optional<Decision> HostPathCall::ResolvePaths(ProcessTable* table, bool instead) {
  // An error of the second path (its name or its directory) is reported only after the walk on
  // the first.
  auto second_path_error = [&](int i, long err) {
    if (i == 1) {
      const unsigned link_flags = nr == SYS_linkat ? static_cast<unsigned>(call.arg(4)) : 0;
      if (long first = FirstPathError(nr, paths[0], link_flags, c)) return Decision::Emulate(first);
    }
    return Decision::Emulate(err);
  };
  for (int i = 0; i < decoded.n; ++i) {
    const PathArg& p = decoded.paths[i];
    AtPath& at = paths[i];
    if (p.null && TimesOnDescriptor(nr, call)) {
      at.dirfd = -1;  // the descriptor itself (futimens)
      continue;
    }
    if (!p.null && p.read_err) return second_path_error(i, -p.read_err);
    at.path = p.null ? "" : p.path;  // statx and newfstatat take NULL for ""
    bool via_shadow = false;
    RewriteProcPath(t, &at.path, &via_shadow, table);
    if (at.path.empty() && !p.empty_ok) return second_path_error(i, -ENOENT);
    if (!via_shadow && !instead && IsKernelPath(at.path)) return Decision::Pass();
    const int dfd = ResolveDirFd(t, p.dirfd, at.path, at.holder);
    if (dfd < 0 && dfd != AT_FDCWD) return second_path_error(i, dfd);
    at.dirfd = dfd;
  }
  return std::nullopt;
}

Decision HostPathCall::Stats() {
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
    default:
      return Decision::Pass();
  }
}

Decision HostPathCall::Attributes() {
  switch (nr) {
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2: {
      const int mode = static_cast<int>(nr == SYS_access ? a1 : a2);
      const int flags = nr == SYS_faccessat2 ? static_cast<int>(a3) : 0;
      // Without AT_EACCESS the real ids are checked, as access(2) does.
      AsTracee as(c, !(flags & AT_EACCESS));
      return Decision::Emulate(
          Result(syscall(SYS_faccessat2, D(0), P(0), mode, flags | AT_EACCESS)));
    }
    case SYS_chmod:
    case SYS_fchmodat:
    case SYS_fchmodat2: {
      const mode_t mode = static_cast<mode_t>(nr == SYS_chmod ? a1 : a2);
      const unsigned flags = nr == SYS_fchmodat2 ? static_cast<unsigned>(a3) : 0;
      AsTracee as(c);
      return Decision::Emulate(Result(syscall(SYS_fchmodat2, D(0), P(0), mode, flags)));
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
      // The times were read before the path (path_call_decoder.h).
      AsTracee as(c);
      if (paths[0].dirfd == -1) {
        // futimens, futimesat(fd, NULL): the descriptor is the first argument.
        std::shared_ptr<HostFile> f = ShadowOf(t, static_cast<int>(call.arg(0)));
        if (!f) return Decision::Pass();
        return Decision::Emulate(Result(futimens(f->fd, times())));
      }
      const int flags = nr == SYS_utimensat ? static_cast<int>(a3) : 0;
      return Decision::Emulate(Result(utimensat(D(0), P(0), times(), flags)));
    }
    case SYS_truncate: {
      // truncate(2) has no directory argument: the file is found relative to the tracee's
      // cwd (an O_PATH descriptor, with the lookup's errors), then truncated by the path of
      // that descriptor, which checks write permission as truncate does.
      AsTracee as(c);
      ScopedFd f(openat(D(0), P(0), O_PATH | O_CLOEXEC));
      if (f.get() < 0) return Decision::Emulate(-errno);
      const std::string via = "/proc/self/fd/" + std::to_string(f.get());
      return Decision::Emulate(Result(truncate(via.c_str(), static_cast<off_t>(a1))));
    }
    default:
      return Decision::Pass();
  }
}

Decision HostPathCall::Names() {
  long r;
  switch (nr) {
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
      AsTracee as(c);  // without CAP_MKNOD unless the tracee has it
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
      const int flags = nr == SYS_linkat ? static_cast<int>(a4) : 0;
      if ((flags & AT_EMPTY_PATH) && paths[0].path.empty() &&
          !(c.cap_effective & kCapDacReadSearch)) {
        // Linking a descriptor: without CAP_DAC_READ_SEARCH only the credentials that opened
        // it may. The monitor's descriptor was opened under the monitor's own credentials, so
        // the link is made through its /proc/self/fd entry, as the tracee itself could.
        std::shared_ptr<HostFile> f = ShadowOf(t, static_cast<int>(call.arg(0)));
        if (f && f->opener && !SameCredentials(*f->opener, c)) return Decision::Emulate(-ENOENT);
        const std::string via = "/proc/self/fd/" + std::to_string(D(0));
        AsTracee as(c);
        return Decision::Emulate(
            Result(linkat(AT_FDCWD, via.c_str(), D(1), P(1), AT_SYMLINK_FOLLOW)));
      }
      AsTracee as(c);
      return Decision::Emulate(Result(linkat(D(0), P(0), D(1), P(1), flags)));
    }
    case SYS_symlink:
    case SYS_symlinkat: {
      AsTracee as(c);
      return Decision::Emulate(Result(symlinkat(x.target.c_str(), D(0), P(0))));
    }
    case SYS_readlink:
    case SYS_readlinkat: {
      const uint64_t buf = nr == SYS_readlink ? a1 : a2;
      // The size is an int (EarlyErrno refused one that is not positive).
      const int size = static_cast<int>(nr == SYS_readlink ? a2 : a3);
      std::vector<char> out(static_cast<size_t>(std::min(size, 65536)));
      AsTracee as(c);
      r = Result(readlinkat(D(0), P(0), out.data(), out.size()));
      if (r > 0 && WriteMemory(*t.proc, buf, out.data(), static_cast<size_t>(r)) != 0) r = -EFAULT;
      return Decision::Emulate(r);
    }
    default:
      return Decision::Pass();
  }
}

Decision HostPathCall::Xattrs() {
  long r;
  // Extended attributes: path, l-path and descriptor forms share the work.
  const bool by_fd = info.args[0] == Arg::kFd;
  const bool nofollow = !by_fd && info.last_link == LastLink::kNever;
  ScopedFd target_fd;
  if (!by_fd) {
    AsTracee as(c);
    // A symbolic link itself (l*xattr): O_PATH|O_NOFOLLOW opens it; errors are the lookup's.
    target_fd.reset(openat(D(0), P(0), O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0)));
    if (target_fd.get() < 0) return Decision::Emulate(-errno);
  }
  // *xattr on an O_PATH descriptor goes through /proc/self/fd: following that magic link lands
  // on the descriptor's own file (the symbolic link itself for the l* forms).
  const std::string via =
      "/proc/self/fd/" + std::to_string(by_fd ? xattr_shadow->fd : target_fd.get());
  const int fd = by_fd ? xattr_shadow->fd : -1;
  const char* name = x.name.c_str();
  // Without the tracee's CAP_SYS_ADMIN the kernel refuses trusted.* and security.* names and
  // leaves trusted.* out of lists, as for the tracee.
  AsTracee as(c);
  switch (nr) {
    case SYS_setxattr:
    case SYS_lsetxattr:
    case SYS_fsetxattr: {
      const void* value = x.value.data();
      r = fd >= 0 ? fsetxattr(fd, name, value, a3, static_cast<int>(a4))
                  : setxattr(via.c_str(), name, value, a3, static_cast<int>(a4));
      return Decision::Emulate(Result(r));
    }
    case SYS_getxattr:
    case SYS_lgetxattr:
    case SYS_fgetxattr: {
      std::vector<char> value(std::min<uint64_t>(a3, XATTR_SIZE_MAX));
      r = fd >= 0 ? fgetxattr(fd, name, value.data(), value.size())
                  : getxattr(via.c_str(), name, value.data(), value.size());
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
    default:  // removexattr, lremovexattr, fremovexattr
      r = fd >= 0 ? fremovexattr(fd, name) : removexattr(via.c_str(), name);
      return Decision::Emulate(Result(r));
  }
}

}  // namespace

Decision HostHandler::PathCall(Thread& t, SyscallRegs& call, const Creds& creds, bool instead) {
  const long nr = call.nr();
  const SyscallInfo* info = FindSyscall(nr);
  if (!info) return Decision::Pass();
  HostPathCall hc(t, call, *info, creds);
  // The f*xattr calls are this handler's on a shadow only: the kernel answers the others whole.
  if (info->family == Family::kXattr && info->args[0] == Arg::kFd) {
    hc.xattr_shadow = ShadowOf(t, static_cast<int>(call.arg(0)));
    if (!hc.xattr_shadow) return Decision::Pass();
  }
  // The kernel's own order: flags and sizes, then what the call copies from memory before its
  // paths (times, link target, attribute name and value), then each path and its directory.
  if (std::optional<Decision> d = DecodePathCall(t, *info, call, &hc.decoded)) return *d;
  // An O_PATH descriptor is no descriptor to these calls (checked after the name and value).
  if (hc.xattr_shadow && (fcntl(hc.xattr_shadow->fd, F_GETFL) & O_PATH)) {
    return Decision::Emulate(-EBADF);
  }
  if (std::optional<Decision> d = hc.ResolvePaths(table_, instead)) return *d;
  switch (info->family) {
    case Family::kStat:
      return hc.Stats();
    case Family::kAttr:
    case Family::kData:  // truncate
      return hc.Attributes();
    case Family::kNames:
      return hc.Names();
    case Family::kXattr:
      return hc.Xattrs();
    default:
      return Decision::Pass();
  }
}

}  // namespace amino::monitor::host
