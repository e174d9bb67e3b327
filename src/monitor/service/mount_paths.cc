// Calls that name files by path (stat, access, chmod, mkdir, rename, the path forms of the
// xattr calls, ...): arguments read and checked in the kernel's order, each path resolved to
// its target, then the call goes to the kernel (with a substitute path where needed) or to the
// mount's schema, in one transaction.
#include <fcntl.h>
#include <linux/fs.h>
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
#include <memory>
#include <string>
#include <vector>

#include "monitor/calls/validate.h"
#include "monitor/service/mount_handler.h"
#include "monitor/service/stat_convert.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

using schema::Status;

constexpr long kStatfsValid = 0x0020;  // ST_VALID: f_flags is filled in (linux/statfs.h)

bool IsXattrNameCall(long nr) {
  return nr == SYS_setxattr || nr == SYS_lsetxattr || nr == SYS_getxattr || nr == SYS_lgetxattr ||
         nr == SYS_removexattr || nr == SYS_lremovexattr;
}

// The calls served here.
bool IsPathCall(long nr) {
  static constexpr long kCalls[] = {
      SYS_stat,       SYS_lstat,       SYS_newfstatat,   SYS_statx,    SYS_statfs,    SYS_access,
      SYS_faccessat,  SYS_faccessat2,  SYS_chmod,        SYS_fchmodat, SYS_fchmodat2, SYS_chown,
      SYS_lchown,     SYS_fchownat,    SYS_utime,        SYS_utimes,   SYS_futimesat, SYS_utimensat,
      SYS_truncate,   SYS_setxattr,    SYS_lsetxattr,    SYS_getxattr, SYS_lgetxattr, SYS_listxattr,
      SYS_llistxattr, SYS_removexattr, SYS_lremovexattr, SYS_mkdir,    SYS_mkdirat,   SYS_mknod,
      SYS_mknodat,    SYS_rmdir,       SYS_unlink,       SYS_unlinkat, SYS_rename,    SYS_renameat,
      SYS_renameat2,  SYS_link,        SYS_linkat,       SYS_symlink,  SYS_symlinkat, SYS_readlink,
      SYS_readlinkat};
  return std::find(std::begin(kCalls), std::end(kCalls), nr) != std::end(kCalls);
}

// The arguments besides the paths that Linux copies from memory and checks before it looks a
// path up: the xattr name and value, the times, the symbolic link's target.
struct Extras {
  std::string name;
  std::string value;
  std::string target;
  timespec times[2] = {};
  bool has_times = false;
  bool nothing_to_do = false;  // utimensat with both times UTIME_OMIT: succeeds at once
};

// utimensat and futimesat with a NULL path and a descriptor act on the descriptor itself.
bool TimesOnDescriptor(long nr, const SyscallRegs& call) {
  return (nr == SYS_utimensat || nr == SYS_futimesat) && call.arg(1) == 0 &&
         static_cast<int>(call.arg(0)) != AT_FDCWD;
}

// 0 or the errno the call fails with before any path is looked at.
int ReadExtras(Process& p, long nr, const SyscallRegs& call, Extras* x) {
  if (IsXattrNameCall(nr)) {
    int err = ReadString(p, call.arg(1), calls::kXattrNameReadMax, &x->name);
    if (err && err != ENAMETOOLONG) return err;
    if (int e = calls::ValidateXattrName(x->name, err == ENAMETOOLONG)) return e;
    if (nr == SYS_setxattr || nr == SYS_lsetxattr) {
      const uint64_t size = call.arg(3);
      if (int e = calls::ValidateXattrValueSize(size)) return e;
      x->value.resize(size);
      if (size && ReadMemory(p, call.arg(2), x->value.data(), size) != 0) return EFAULT;
    }
    return 0;
  }
  switch (nr) {
    case SYS_symlink:
    case SYS_symlinkat:
      if (int err = ReadString(p, call.arg(0), PATH_MAX, &x->target)) return err;
      return x->target.empty() ? ENOENT : 0;
    case SYS_utime: {
      if (!call.arg(1)) return 0;
      utimbuf u;
      if (ReadMemory(p, call.arg(1), &u, sizeof u) != 0) return EFAULT;
      x->times[0] = {u.actime, 0};
      x->times[1] = {u.modtime, 0};
      x->has_times = true;
      return 0;
    }
    case SYS_utimes:
    case SYS_futimesat: {
      const uint64_t addr = call.arg(nr == SYS_utimes ? 1 : 2);
      if (!addr) return 0;
      timeval tv[2];
      if (ReadMemory(p, addr, tv, sizeof tv) != 0) return EFAULT;
      for (int i = 0; i < 2; ++i) {
        // Checked here: UTIME_NOW and UTIME_OMIT are not microseconds.
        if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) return EINVAL;
        x->times[i] = {tv[i].tv_sec, tv[i].tv_usec * 1000};
      }
      x->has_times = true;
      return 0;
    }
    case SYS_utimensat: {
      if (call.arg(2)) {
        if (ReadMemory(p, call.arg(2), x->times, sizeof x->times) != 0) return EFAULT;
        x->has_times = true;
        if (calls::UtimesNothingToDo(x->times)) {
          x->nothing_to_do = true;
          return 0;
        }
      }
      return calls::ValidateUtimensatFlags(static_cast<unsigned>(call.arg(3)),
                                           TimesOnDescriptor(nr, call));
    }
    default:
      return 0;
  }
}

// One path argument: the register it is in and the directory it is relative to.
struct PathArg {
  int arg = -1;
  int dirfd = AT_FDCWD;
  bool empty_ok = false;
  bool null = false;  // a NULL pointer where the call allows one
  int read_err = 0;
  std::string path;
};

// The path arguments of `info` (not the xattr name nor the symbolic link's target).
int PathArgs(const SyscallInfo& info, const SyscallRegs& call, PathArg out[2]) {
  const long nr = info.nr;
  std::array<uint64_t, 6> regs;
  for (int i = 0; i < 6; ++i) regs[static_cast<size_t>(i)] = call.arg(i);
  int n = 0;
  for (int i = 0; i < 6 && info.args[i] != Arg::kNone && n < 2; ++i) {
    if (info.args[i] != Arg::kPath) continue;
    if (IsXattrNameCall(nr) && i == 1) continue;
    if ((nr == SYS_symlink || nr == SYS_symlinkat) && i == 0) continue;
    PathArg& p = out[n++];
    p.arg = i;
    if (i > 0 && info.args[i - 1] == Arg::kDirFd) p.dirfd = static_cast<int>(call.arg(i - 1));
    p.empty_ok = calls::EmptyPathAllowed(nr, i, regs);
  }
  return n;
}

// After a successful call: writes `v` to the tracee at `addr`, returning `r` or -EFAULT.
template <typename T>
long CopyOut(Thread& t, uint64_t addr, const T& v, long r = 0) {
  return WriteMemory(*t.proc, addr, &v, sizeof v) == 0 ? r : -EFAULT;
}

// A name that left the mount on the way to the second path of a rename or link: the two files
// are on different file systems.
Status NoEscape(Status st) {
  if (!st.ok() && st.error() == EXDEV) return Status::Errno(EXDEV);
  return st;
}

// What Linux checks of one path of a rename or link before it compares the file systems of the
// two: the directory the name is in (rename, the new name of link), the file itself (the old
// name of link), and for a new link that the name is free.
struct PairCheck {
  bool whole = false;
  bool follow = false;
  bool must_be_free = false;
};

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The check on a path the kernel would resolve (as the tracee): 0 or an errno.
int HostPairError(Thread& t, const host::Creds& creds, const std::string& host_cwd,
                  const PathArg& p, const Target& target, const PairCheck& check) {
  std::string path;
  if (target.kind == Target::Kind::kSubstitute || (!p.path.empty() && p.path[0] == '/')) {
    path = target.kind == Target::Kind::kSubstitute ? target.path : p.path;
  } else {
    std::string base = host_cwd;
    if (p.dirfd != AT_FDCWD) {
      char buf[PATH_MAX];
      const std::string fd_link =
          "/proc/" + std::to_string(t.tid) + "/fd/" + std::to_string(p.dirfd);
      const ssize_t len = readlink(fd_link.c_str(), buf, sizeof buf - 1);
      if (len <= 0) return EBADF;
      base.assign(buf, static_cast<size_t>(len));
    }
    if (p.path.empty()) return 0;  // AT_EMPTY_PATH: the descriptor itself, which exists
    if (base.empty() || base[0] != '/') return 0;
    path = base + "/" + p.path;
  }
  path = WithoutTrailingSlashes(path);
  host::AsTracee as(creds);
  struct stat st;
  if (check.whole) {
    if ((check.follow ? stat(path.c_str(), &st) : lstat(path.c_str(), &st)) != 0) return errno;
    return 0;
  }
  if (stat(DirOf(path).c_str(), &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  if (faccessat(AT_FDCWD, DirOf(path).c_str(), X_OK, AT_EACCESS) != 0) return errno;
  if (check.must_be_free && lstat(path.c_str(), &st) == 0) return EEXIST;
  return 0;
}

// The same check in a mount's schema, in transaction `txn`: 0 or an errno.
int ServedPairErrno(MountFs& m, schema::Transaction& txn, const schema::Cred& cred,
                    const std::string& rel, const PairCheck& check) {
  const std::string path = WithoutTrailingSlashes(rel);
  if (check.whole) {
    auto st = m.fs->GetStat(txn, cred, path, check.follow);
    return st.ok() ? 0 : st.status().error();
  }
  auto dir = m.fs->GetStat(txn, cred, std::string(schema::ParentPath(path)), true);
  if (!dir.ok()) return dir.status().error();
  if (!S_ISDIR(dir->attr.mode)) return ENOTDIR;
  // The walk searches the directory before it looks at the last name.
  if (!m.fs->Access(txn, cred, std::string(schema::ParentPath(path)), X_OK).ok()) return EACCES;
  if (check.must_be_free && m.fs->GetStat(txn, cred, path, false).ok()) return EEXIST;
  return 0;
}

// ServedPairErrno in a transaction of its own: 0, an errno, or -1 when a lock is held by
// another.
int ServedPairError(MountFs& m, const schema::Cred& cred, const std::string& rel,
                    const PairCheck& check) {
  int err = 0;
  CallOutcome o = RunCall(m, [&](schema::Transaction& txn) {
    err = ServedPairErrno(m, txn, cred, rel, check);
    return Status::Ok();
  });
  if (o.kind == CallOutcome::Kind::kConflict) return -1;
  // A name that leaves the mount is on another file system anyway.
  return err == EXDEV ? 0 : err;
}

// RENAME_WHITEOUT, after the rename: the old name becomes a whiteout (a character device 0:0
// without permission bits, the caller's, as overlay file systems use them). Linux lets any
// caller make one.
Status Whiteout(MountFs& m, schema::Transaction& txn, const schema::Cred& cred,
                const std::string& rel) {
  const std::string path = WithoutTrailingSlashes(rel);
  const schema::Cred root = schema::Cred::Root();
  // Two names of one file: nothing moved, and no whiteout is made.
  if (m.fs->GetStat(txn, root, path, false).ok()) return Status::Ok();
  auto dir = m.fs->GetStat(txn, root, std::string(schema::ParentPath(path)), true);
  if (!dir.ok()) return dir.status();
  auto made = m.fs->Mknod(txn, root, path, S_IFCHR, 0);
  if (!made.ok()) return made.status();
  const gid_t gid = (dir->attr.mode & S_ISGID) ? static_cast<gid_t>(-1) : cred.gid;
  return m.fs->Chown(txn, root, path, cred.uid, gid, false);
}

// A rename or link whose two paths are both on the host: the kernel does it, given substitutes
// for the paths that need them (each in its own slot of the shared region).
Decision OnHostPair(Thread& t, SyscallRegs& call, const int args[2], const Target targets[2],
                    const std::function<Decision(int, const std::string&)>& substitute,
                    host::HostHandler& host) {
  const bool sub0 = targets[0].kind == Target::Kind::kSubstitute;
  const bool sub1 = targets[1].kind == Target::Kind::kSubstitute;
  if (!sub0 && !sub1) return Decision::Pass();
  if (sub0 != sub1) {
    const int i = sub0 ? 0 : 1;
    return substitute(args[i], targets[i].path);
  }
  if (call.notified) {
    // No registers to change: the monitor makes the call itself.
    if (!t.proc->region) return Decision::Emulate(-ENOMEM);
    SyscallRegs with = call;
    for (int i = 0; i < 2; ++i) {
      const uint64_t addr = t.proc->region->Put(t.tid, 4096 * static_cast<size_t>(args[i] & 3),
                                                targets[i].path + '\0');
      if (!addr) return Decision::Emulate(-ENAMETOOLONG);
      // rename, link: arguments 0 and 1; renameat, renameat2, linkat: 1 and 3.
      unsigned long long* reg = args[i] == 0   ? &with.regs.rdi
                                : args[i] == 1 ? &with.regs.rsi
                                               : &with.regs.r10;
      *reg = addr;
    }
    return host.OnEntry(t, with);
  }
  Decision d = substitute(args[0], targets[0].path);
  if (d.kind != Decision::Kind::kObserveExit) return d;
  return substitute(args[1], targets[1].path);
}

// Nesting of rename and link calls re-run after a path left a mount and came back into one.
int pair_reruns = 0;

// Whether single-path call `call` follows its path's last link (its flags say, or its name:
// lstat, lchown, unlink... never do).
bool FollowsLastLink(const SyscallRegs& call) {
  const uint64_t a2 = call.arg(2), a3 = call.arg(3), a4 = call.arg(4);
  switch (call.nr()) {
    case SYS_stat:
    case SYS_statfs:
    case SYS_chmod:
    case SYS_fchmodat:
    case SYS_chown:
    case SYS_truncate:
    case SYS_access:
    case SYS_faccessat:
    case SYS_utime:
    case SYS_utimes:
    case SYS_futimesat:
    case SYS_getxattr:
    case SYS_setxattr:
    case SYS_listxattr:
    case SYS_removexattr:
    case SYS_chdir:
      return true;
    case SYS_newfstatat:
    case SYS_faccessat2:
    case SYS_utimensat:
      return !(a3 & AT_SYMLINK_NOFOLLOW);
    case SYS_statx:
      return !(a2 & AT_SYMLINK_NOFOLLOW);
    case SYS_fchownat:
      return !(a4 & AT_SYMLINK_NOFOLLOW);
    case SYS_name_to_handle_at:
    case SYS_linkat:
      return (a4 & AT_SYMLINK_FOLLOW) != 0;
    default:
      return false;
  }
}

}  // namespace

Decision MountHandler::PathCall(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  const SyscallInfo* info = FindSyscall(nr);
  if (!info || !IsPathCall(nr)) return Decision::Pass();
  std::array<uint64_t, 6> regs;
  for (int i = 0; i < 6; ++i) regs[static_cast<size_t>(i)] = call.arg(i);
  if (int err = calls::EarlyErrno(nr, regs)) return Decision::Emulate(-err);
  Extras extras;
  if (int err = ReadExtras(*t.proc, nr, call, &extras)) return Decision::Emulate(-err);
  if (extras.nothing_to_do) return Decision::Emulate(0);

  PathArg paths[2];
  const int n = PathArgs(*info, call, paths);
  for (int i = 0; i < n; ++i) {
    PathArg& p = paths[i];
    const uint64_t addr = call.arg(p.arg);
    const bool stat_call = nr == SYS_newfstatat || nr == SYS_statx;
    if (addr == 0 && (TimesOnDescriptor(nr, call) || (stat_call && p.empty_ok))) {
      p.null = true;
      continue;
    }
    p.read_err = ReadString(*t.proc, addr, PATH_MAX, &p.path);
  }

  // The stat calls check their flags after reading the path, which decides whether they look
  // at a descriptor or a path.
  bool on_descriptor = TimesOnDescriptor(nr, call);
  if (nr == SYS_newfstatat || nr == SYS_statx) {
    const unsigned flags = static_cast<unsigned>(call.arg(nr == SYS_statx ? 2 : 3));
    const bool empty = paths[0].null || (paths[0].read_err == 0 && paths[0].path.empty());
    on_descriptor = calls::StatsDescriptorItself(nr, paths[0].dirfd, empty, flags);
    const int err = nr == SYS_statx ? calls::ValidateStatx(
                                          flags, static_cast<unsigned>(call.arg(3)), on_descriptor)
                                    : (on_descriptor ? 0 : calls::ValidateFstatatFlags(flags));
    if (err) return Decision::Emulate(-err);
    if (on_descriptor) paths[0].empty_ok = true;
  }
  if (on_descriptor && (paths[0].null || paths[0].path.empty())) {
    // The descriptor itself: the kernel's unless it is served (it reports EBADF too) or a host
    // file the monitor holds for the tracee (a notified substitute open).
    const int fd = paths[0].dirfd;
    std::shared_ptr<ServedFile> f = ServedOf(t, fd);
    if (!f) return fd >= 0 && host::ShadowOf(t, fd) ? host_.OnEntry(t, call) : Decision::Pass();
    // futimens takes the descriptor with fdget(), which an O_PATH descriptor does not pass.
    if (paths[0].null && TimesOnDescriptor(nr, call) && (f->flags & O_PATH)) {
      return Decision::Emulate(-EBADF);
    }
    Target target;
    target.kind = Target::Kind::kFile;
    target.file = f;
    target.mfs = f->mfs;
    int arg = paths[0].arg;
    return ServePath(t, call, &target, 1, &arg);
  }

  Target targets[2];
  int args[2] = {-1, -1};
  auto on_host = [](const Target& x) {
    return x.kind == Target::Kind::kHost || x.kind == Target::Kind::kSubstitute;
  };
  // Rename and link: what Linux finds wrong with path `i` before it looks at the next path or
  // compares file systems (0, an errno, or -1 for a lock held by another).
  auto pair_error = [&](int i) {
    const bool link = nr == SYS_link || nr == SYS_linkat;
    const PairCheck check =
        i == 0 ? PairCheck{link, nr == SYS_linkat && (call.arg(4) & AT_SYMLINK_FOLLOW), false}
               : PairCheck{false, false, link};
    if (on_host(targets[i])) {
      const host::Creds* creds = creds_.Get(t.tid);
      return HostPairError(t, creds ? *creds : host::Creds(), HostCwd(t), paths[i], targets[i],
                           check);
    }
    if (targets[i].kind != Target::Kind::kServed) return 0;
    return ServedPairError(*targets[i].mfs, CredOf(t), targets[i].path, check);
  };
  for (int i = 0; i < n; ++i) {
    int err = paths[i].read_err;
    // getname() refuses an empty path before the directory descriptor is looked at.
    if (!err && paths[i].path.empty() && !paths[i].empty_ok && !paths[i].null) err = ENOENT;
    if (!err) err = -Resolve(t, paths[i].dirfd, paths[i].path, paths[i].empty_ok, &targets[i]);
    if (err) {
      // The first path of a rename or link is looked up before the second is read.
      const int first = i == 1 ? pair_error(0) : 0;
      if (first < 0) return Conflict();
      return Decision::Emulate(-(first ? first : err));
    }
    args[i] = paths[i].arg;
  }
  // The link of a served descriptor in /proc names the file, not its placeholder.
  if ((nr == SYS_readlink || nr == SYS_readlinkat) && targets[0].kind == Target::Kind::kHost) {
    if (std::optional<std::string> link = ServedFdLink(t, paths[0].path)) {
      const bool at = nr == SYS_readlinkat;
      const size_t size = static_cast<size_t>(static_cast<int>(at ? call.arg(3) : call.arg(2)));
      const size_t len = std::min(size, link->size());
      if (WriteMemory(*t.proc, at ? call.arg(2) : call.arg(1), link->data(), len) != 0)
        return Decision::Emulate(-EFAULT);
      return Decision::Emulate(static_cast<long>(len));
    }
  }
  // chmod("/proc/self/fd/N") is how the C library changes an O_PATH descriptor's file, and
  // linkat of it with AT_SYMLINK_FOLLOW how a file opened with O_TMPFILE gets its name.
  if (n == 1 || nr == SYS_linkat) {
    FollowServedFdLink(t, paths[0].path, FollowsLastLink(call), &targets[0]);
  }
  // readlinkat of an empty path names the directory itself, which is no link.
  if ((nr == SYS_readlink || nr == SYS_readlinkat) && paths[0].path.empty() &&
      targets[0].kind == Target::Kind::kServed) {
    return Decision::Emulate(-ENOENT);
  }

  // A host directory the monitor holds for the tracee (a notified substitute open): the kernel
  // would see only its placeholder, so the monitor makes the call.
  for (int i = 0; i < n; ++i) {
    if (targets[i].kind == Target::Kind::kHost && paths[i].dirfd >= 0 &&
        host::ShadowOf(t, paths[i].dirfd)) {
      return host_.OnEntry(t, call);
    }
  }
  auto substitute = [&](int arg, const std::string& path) {
    return Substitute(t, call, arg, path);
  };
  if (n == 2) {
    if (on_host(targets[0]) && on_host(targets[1])) {
      return OnHostPair(t, call, args, targets, substitute, host_);
    }
    const MountFs* m0 = on_host(targets[0]) ? nullptr : targets[0].mfs;
    const MountFs* m1 = on_host(targets[1]) ? nullptr : targets[1].mfs;
    if (m0 != m1) {
      // Linux looks both names up before it compares their file systems.
      for (int i = 0; i < 2; ++i) {
        const int err = pair_error(i);
        if (err < 0) return Conflict();
        if (err) return Decision::Emulate(-err);
      }
      return Decision::Emulate(-EXDEV);
    }
    return ServePath(t, call, targets, n, args);
  }
  switch (targets[0].kind) {
    case Target::Kind::kHost:
      return Decision::Pass();
    case Target::Kind::kSubstitute:
      return Substitute(t, call, args[0], targets[0].path);
    default:
      return ServePath(t, call, targets, n, args);
  }
}

Decision MountHandler::ServePath(Thread& t, SyscallRegs& call, Target* targets, int n,
                                 int* path_args) {
  const long nr = call.nr();
  Extras x;
  if (int err = ReadExtras(*t.proc, nr, call, &x)) return Decision::Emulate(-err);
  const uint64_t a1 = call.arg(1), a2 = call.arg(2), a3 = call.arg(3), a4 = call.arg(4);
  Target& target = targets[0];
  const int arg = path_args[0];
  const bool on_file = target.kind == Target::Kind::kFile;
  ServedFile* file = target.file.get();
  schema::Cred cred = CredOf(t);
  MountFs* where = nullptr;  // the mount the body ran in (an escape may lead to another)

  // Runs a call that takes a path or, with AT_EMPTY_PATH, the descriptor's file.
  auto run = [&](auto&& on_path, auto&& on_id, const Done& done) -> Decision {
    if (on_file) {
      where = file->mfs;
      return RunOnFile(
          *file, [&](schema::Transaction& txn) { return on_id(*file->mfs, txn, file->id); }, done);
    }
    return RunOnTarget(
        t, call, target, arg,
        [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
          where = &m;
          return on_path(m, txn, rel);
        },
        done);
  };
  // The same for calls that need the file's status.
  auto run_stat = [&](bool follow, const std::function<long(const schema::Stat&)>& done) {
    schema::Stat st;
    return run(
        [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
          auto r = m.fs->GetStat(txn, cred, rel, follow);
          if (!r.ok()) return r.status();
          st = *r;
          return Status::Ok();
        },
        [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> Status {
          auto r = m.fs->FStat(txn, id);
          if (!r.ok()) return r.status();
          st = *r;
          return Status::Ok();
        },
        [&] { return done(st); });
  };
  auto no_id = [](MountFs&, schema::Transaction&, schema::FileId) { return Status::Errno(ENOENT); };
  // A file target that is not a descriptor's (AT_EMPTY_PATH) is "." in a removed working
  // directory: what Linux answers for "." there.
  auto is_dir_error = [](int err) {
    return [err](MountFs&, schema::Transaction&, schema::FileId) { return Status::Errno(err); };
  };
  auto ok = [] { return 0L; };

  switch (nr) {
    case SYS_stat:
    case SYS_lstat:
      return run_stat(nr == SYS_stat, [&](const schema::Stat& st) {
        return CopyOut(t, a1, ToStat(st, where->dev));
      });
    case SYS_newfstatat:
      return run_stat(!(a3 & AT_SYMLINK_NOFOLLOW), [&](const schema::Stat& st) {
        return CopyOut(t, a2, ToStat(st, where->dev));
      });
    case SYS_statx:
      return run_stat(!(a2 & AT_SYMLINK_NOFOLLOW), [&](const schema::Stat& st) {
        return CopyOut(t, a4, ToStatx(st, where->dev, static_cast<unsigned>(a3)));
      });
    case SYS_statfs: {
      struct statfs out {};
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto st = m.fs->GetStat(txn, cred, rel, true);
            if (!st.ok()) return st.status();
            auto fs = m.fs->StatFs(txn);
            if (!fs.ok()) return fs.status();
            out = *fs;
            return Status::Ok();
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId) -> Status {
            auto fs = m.fs->StatFs(txn);
            if (!fs.ok()) return fs.status();
            out = *fs;
            return Status::Ok();
          },
          [&] {
            out.f_flags |= kStatfsValid;
            return CopyOut(t, a1, out);
          });
    }
    case SYS_access:
    case SYS_faccessat:
    case SYS_faccessat2: {
      const int mode = static_cast<int>(nr == SYS_access ? a1 : a2);
      const unsigned flags = nr == SYS_faccessat2 ? static_cast<unsigned>(a3) : 0;
      // Without AT_EACCESS the real ids are checked, as access(2) does.
      if (!(flags & AT_EACCESS)) cred = CredOf(t, true);
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Access(txn, cred, rel, mode, !(flags & AT_SYMLINK_NOFOLLOW));
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FAccess(txn, cred, id, mode);
          },
          ok);
    }
    case SYS_chmod:
    case SYS_fchmodat:
    case SYS_fchmodat2: {
      const mode_t mode = static_cast<mode_t>(nr == SYS_chmod ? a1 : a2);
      const bool follow = !(nr == SYS_fchmodat2 && (a3 & AT_SYMLINK_NOFOLLOW));
      return run([&](MountFs& m, schema::Transaction& txn,
                     const std::string& rel) { return m.fs->Chmod(txn, cred, rel, mode, follow); },
                 [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
                   return m.fs->FChmod(txn, cred, id, mode);
                 },
                 ok);
    }
    case SYS_chown:
    case SYS_lchown:
    case SYS_fchownat: {
      const bool at = nr == SYS_fchownat;
      const uid_t uid = static_cast<uid_t>(at ? a2 : a1);
      const gid_t gid = static_cast<gid_t>(at ? a3 : a2);
      const bool follow = at ? !(a4 & AT_SYMLINK_NOFOLLOW) : nr == SYS_chown;
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Chown(txn, cred, rel, uid, gid, follow);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FChown(txn, cred, id, uid, gid);
          },
          ok);
    }
    case SYS_utime:
    case SYS_utimes:
    case SYS_futimesat:
    case SYS_utimensat: {
      const timespec* times = x.has_times ? x.times : nullptr;
      const bool follow = !(nr == SYS_utimensat && (a3 & AT_SYMLINK_NOFOLLOW));
      // Linux checks the nanoseconds once it has found the file.
      const int bad_times = calls::ValidateUtimes(times);
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            if (bad_times) {
              auto st = m.fs->GetStat(txn, cred, rel, follow);
              return st.ok() ? Status::Errno(bad_times) : st.status();
            }
            return m.fs->Utimens(txn, cred, rel, times, follow);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            if (bad_times) return Status::Errno(bad_times);
            return m.fs->FUtimens(txn, cred, id, times);
          },
          ok);
    }
    case SYS_truncate: {
      schema::FileId truncated = 0;
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            if (!shared_maps_.empty()) {
              auto st = m.fs->GetStat(txn, cred, rel, true);
              if (st.ok()) truncated = st->ino;
            }
            return m.fs->Truncate(txn, cred, rel, static_cast<int64_t>(a1));
          },
          is_dir_error(EISDIR),
          [&] {
            if (truncated) shared_maps_.Resized(*where, truncated, a1);
            return 0L;
          });
    }
    case SYS_setxattr:
    case SYS_lsetxattr:
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->SetXattr(txn, cred, rel, x.name, x.value, static_cast<int>(a4),
                                  nr == SYS_setxattr);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FSetXattr(txn, cred, id, x.name, x.value, static_cast<int>(a4));
          },
          ok);
    case SYS_getxattr:
    case SYS_lgetxattr: {
      std::string value;
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto v = m.fs->GetXattr(txn, cred, rel, x.name, nr == SYS_getxattr);
            if (!v.ok()) return v.status();
            value = std::move(*v);
            return Status::Ok();
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> Status {
            auto v = m.fs->FGetXattr(txn, cred, id, x.name);
            if (!v.ok()) return v.status();
            value = std::move(*v);
            return Status::Ok();
          },
          [&]() -> long {
            const long len = static_cast<long>(value.size());
            if (a3 == 0) return len;
            if (value.size() > a3) return -ERANGE;
            if (len && WriteMemory(*t.proc, a2, value.data(), value.size()) != 0) return -EFAULT;
            return len;
          });
    }
    case SYS_listxattr:
    case SYS_llistxattr: {
      std::string list;
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto names = m.fs->ListXattr(txn, cred, rel, nr == SYS_listxattr);
            if (!names.ok()) return names.status();
            for (const std::string& name : *names) list.append(name).push_back('\0');
            return Status::Ok();
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> Status {
            auto names = m.fs->FListXattr(txn, cred, id);
            if (!names.ok()) return names.status();
            for (const std::string& name : *names) list.append(name).push_back('\0');
            return Status::Ok();
          },
          [&]() -> long {
            const long len = static_cast<long>(list.size());
            if (a2 == 0) return len;
            if (list.size() > a2) return a2 >= XATTR_LIST_MAX ? -E2BIG : -ERANGE;
            if (len && WriteMemory(*t.proc, a1, list.data(), list.size()) != 0) return -EFAULT;
            return len;
          });
    }
    case SYS_removexattr:
    case SYS_lremovexattr:
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->RemoveXattr(txn, cred, rel, x.name, nr == SYS_removexattr);
          },
          [&](MountFs& m, schema::Transaction& txn, schema::FileId id) {
            return m.fs->FRemoveXattr(txn, cred, id, x.name);
          },
          ok);
    case SYS_mkdir:
    case SYS_mkdirat: {
      // The schema applies the umask: not where a default ACL takes its place.
      const mode_t mode = static_cast<mode_t>(nr == SYS_mkdir ? a1 : a2) & 01777;
      const mode_t umask = UmaskOf(t);
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Mkdir(txn, cred, rel, mode, umask).status();
          },
          is_dir_error(EEXIST), ok);
    }
    case SYS_mknod:
    case SYS_mknodat: {
      const mode_t raw = static_cast<mode_t>(nr == SYS_mknod ? a1 : a2);
      const mode_t mode = raw & (S_IFMT | 07777);
      const mode_t umask = UmaskOf(t);
      // The argument is an unsigned int in the kernel's encoding, which is what stat reports.
      const dev_t dev = static_cast<uint32_t>(nr == SYS_mknod ? a2 : a3);
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return m.fs->Mknod(txn, cred, rel, mode, dev, umask).status();
          },
          is_dir_error(EEXIST), ok);
    }
    case SYS_rmdir:
    case SYS_unlink:
    case SYS_unlinkat: {
      const bool dir = nr == SYS_rmdir || (nr == SYS_unlinkat && (a2 & AT_REMOVEDIR));
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
            return dir ? m.fs->Rmdir(txn, cred, rel) : m.fs->Unlink(txn, cred, rel);
          },
          is_dir_error(dir ? EINVAL : EISDIR),
          [&] {
            // Virtual cwds and directory descriptors look their path up again.
            if (dir) where->dir_generation++;
            return 0L;
          });
    }
    case SYS_symlink:
    case SYS_symlinkat:
      return run([&](MountFs& m, schema::Transaction& txn,
                     const std::string& rel) { return m.fs->Symlink(txn, cred, x.target, rel); },
                 is_dir_error(EEXIST), ok);
    case SYS_readlink:
    case SYS_readlinkat: {
      const bool at = nr == SYS_readlinkat;
      const uint64_t buf = at ? a2 : a1;
      const size_t size = static_cast<size_t>(static_cast<int>(at ? a3 : a2));
      std::string link;
      auto copy = [&]() -> long {
        const size_t len = std::min(size, link.size());
        if (WriteMemory(*t.proc, buf, link.data(), len) != 0) return -EFAULT;
        return static_cast<long>(len);
      };
      if (on_file) {
        // readlinkat(fd, "") of a link opened with O_PATH | O_NOFOLLOW: the link itself.
        if (!S_ISLNK(file->type)) return Decision::Emulate(-ENOENT);
        return RunOnFile(
            *file,
            [&](schema::Transaction& txn) -> Status {
              auto names = file->mfs->fs->Names(txn, file->id);
              if (!names.ok()) return names.status();
              if (names->empty()) return Status::Errno(ENOENT);
              auto r = file->mfs->fs->Readlink(txn, schema::Cred::Root(), names->front());
              if (!r.ok()) return r.status();
              link = std::move(*r);
              return Status::Ok();
            },
            copy);
      }
      return run(
          [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
            auto r = m.fs->Readlink(txn, cred, rel);
            if (!r.ok()) return r.status();
            link = std::move(*r);
            return Status::Ok();
          },
          no_id, copy);
    }
    default:
      break;
  }
  if (n != 2) return Decision::Emulate(-ENOSYS);

  // Two paths in one mount: rename and link. A path that leaves the mount on the way to its
  // directory (a link to elsewhere) is followed after the schema said so.
  Target& second = targets[1];
  bool escaped = false;
  auto no_escape = [&](Status st) {
    if (!st.ok() && st.error() == EXDEV && !st.escaped_path().empty()) escaped = true;
    return NoEscape(std::move(st));
  };
  Decision d;
  if (nr == SYS_link || nr == SYS_linkat) {
    const bool follow = nr == SYS_linkat && (a4 & AT_SYMLINK_FOLLOW);
    d = run(
        [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
          if (&m != second.mfs) return Status::Errno(EXDEV);
          return no_escape(m.fs->Link(txn, cred, rel, second.path, follow));
        },
        [&](MountFs& m, schema::Transaction& txn, schema::FileId id) -> Status {
          // linkat(fd, "", ..., AT_EMPTY_PATH), or of /proc/self/fd/N with AT_SYMLINK_FOLLOW:
          // a new name for the descriptor's file.
          if (&m != second.mfs) return Status::Errno(EXDEV);
          const bool linkable = targets[0].file && targets[0].file->linkable;
          AMINO_RETURN_IF_ERROR(no_escape(m.fs->LinkFile(txn, cred, id, second.path, linkable)));
          if (targets[0].file) targets[0].file->linkable = false;  // as Linux's I_LINKABLE
          return Status::Ok();
        },
        ok);
  } else {
    const unsigned flags = nr == SYS_renameat2 ? static_cast<unsigned>(a4) : 0;
    bool moved_dir = false;
    d = run(
        [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
          if (&m != second.mfs) return Status::Errno(EXDEV);
          AMINO_RETURN_IF_ERROR(
              no_escape(m.fs->Rename(txn, cred, rel, second.path, flags & ~RENAME_WHITEOUT)));
          if (flags & RENAME_WHITEOUT) AMINO_RETURN_IF_ERROR(Whiteout(m, txn, cred, rel));
          // Whether a directory changed its name (or replaced one): virtual cwds and directory
          // descriptors must look their paths up again.
          auto is_dir = [&](const std::string& p) {
            auto st = m.fs->GetStat(txn, schema::Cred::Root(), p, false);
            return !st.ok() || S_ISDIR(st->attr.mode);
          };
          moved_dir = is_dir(second.path) || ((flags & RENAME_EXCHANGE) && is_dir(rel));
          return Status::Ok();
        },
        no_id,
        [&] {
          if (moved_dir) where->dir_generation++;
          return 0L;
        });
  }
  if (!escaped || d.kind != Decision::Kind::kEmulate || d.result != -EXDEV) return d;

  // Where each path's directory really is, links that leave the mount followed.
  bool moved = false;
  for (int i = 0; i < 2; ++i) {
    Target& x = targets[i];
    for (int hops = 0; x.kind == Target::Kind::kServed; ++hops) {
      if (hops == mounts::kMaxEscapes) return Decision::Emulate(-ELOOP);
      const std::string path = WithoutTrailingSlashes(x.path);
      const std::string dir(schema::ParentPath(path));
      std::string out;
      CallOutcome o = RunCall(*x.mfs, [&](schema::Transaction& txn) {
        auto st = x.mfs->fs->GetStat(txn, cred, dir, true);
        if (!st.ok() && st.status().error() == EXDEV) out = st.status().escaped_path();
        return Status::Ok();
      });
      if (o.kind == CallOutcome::Kind::kConflict) return Conflict();
      if (out.empty()) break;  // the directory is in the mount
      out += "/" + std::string(schema::BaseName(path)) + (x.trailing_slash ? "/" : "");
      auto next = resolver_.ContinueOnHost(*x.mfs->mount, out);
      if (!next.ok()) return Decision::Emulate(-next.status().error());
      moved = true;
      x.path = next->path;
      x.trailing_slash = next->trailing_slash;
      if (next->is_host()) {
        x.kind = Target::Kind::kSubstitute;
      } else {
        x.mfs = FsFor(next->mount);
      }
    }
  }
  auto on_host = [](const Target& y) { return y.kind == Target::Kind::kSubstitute; };
  if (on_host(targets[0]) && on_host(targets[1])) {
    int args[2] = {path_args[0], path_args[1]};
    return OnHostPair(
        t, call, args, targets,
        [&](int a, const std::string& path) { return Substitute(t, call, a, path); }, host_);
  }
  const bool same =
      !on_host(targets[0]) && !on_host(targets[1]) && targets[0].mfs == targets[1].mfs;
  if (!moved || !same || pair_reruns >= mounts::kMaxEscapes) return Decision::Emulate(-EXDEV);
  // Both lead into one mount again (a link to the mount's own host path, say).
  ++pair_reruns;
  Decision again = ServePath(t, call, targets, n, path_args);
  --pair_reruns;
  return again;
}

}  // namespace amino::monitor::service
