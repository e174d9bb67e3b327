// Calls that name files by path (stat, access, chmod, mkdir, rename, the path forms of the
// xattr calls, ...): arguments read and checked in the kernel's order, each path resolved to
// its target, then the call goes to the kernel (with a substitute path where needed) or to the
// mount's schema, in one transaction.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "monitor/calls/validate.h"
#include "monitor/path_call_decoder.h"
#include "monitor/service/mount_handler.h"
#include "monitor/service/path_call.h"
#include "monitor/service/stat_convert.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_numbers.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

using schema::Status;

constexpr long kStatfsValid = 0x0020;  // ST_VALID: f_flags is filled in (linux/statfs.h)

// The calls served here: those that look up a path (their descriptor forms are served on the
// descriptor, opens, exec and the cwd calls elsewhere).
bool IsPathCall(const SyscallInfo& info) {
  switch (info.family) {
    case Family::kStat:
    case Family::kAttr:
    case Family::kXattr:
    case Family::kNames:
    case Family::kData:
      break;
    default:
      return false;
  }
  PathSlot slots[2];
  return PathSlots(info, slots) > 0;
}

// What Linux checks of one path of a rename or link before it compares the file systems of the
// two: the directory the name is in (rename, the new name of link), the file itself (the old
// name of link), and for a new link that the name is free.
struct PairCheck {
  bool whole = false;
  bool follow = false;
  bool must_be_free = false;
};

// How path `i` of `info`'s call treats its last name (host_links.h).
LastName LastNameOf(const SyscallInfo& info, const uint64_t (&regs)[6], int i) {
  switch (info.nr) {
    case SYS_unlink:
    case SYS_unlinkat:
    case SYS_rmdir:
    case SYS_rename:
    case SYS_renameat:
    case SYS_renameat2:
    case SYS_mkdir:
    case SYS_mkdirat:
    case SYS_mknod:
    case SYS_mknodat:
    case SYS_symlink:
    case SYS_symlinkat:
      return LastName::kNever;
    default:
      break;
  }
  if (i > 0) return LastName::kNever;  // link's new name
  return FollowsLastLink(info, regs) ? LastName::kFollow : LastName::kLookUp;
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

// The same check in a mount's schema, in transaction `txn`: *err is 0 or an errno. A lock
// held by another or a failing database is the status instead, never folded into an errno.
Status ServedPairCheck(MountFs& m, schema::Transaction& txn, const schema::Cred& cred,
                       const std::string& rel, const PairCheck& check, int* err) {
  auto passed_on = [](const Status& st) { return st.is_conflict() || st.is_storage(); };
  const std::string path = WithoutTrailingSlashes(rel);
  *err = 0;
  if (check.whole) {
    auto st = m.fs->GetStat(txn, cred, path, check.follow);
    if (!st.ok() && passed_on(st.status())) return st.status();
    *err = st.ok() ? 0 : st.status().error();
    return Status::Ok();
  }
  const std::string parent(schema::ParentPath(path));
  auto dir = m.fs->GetStat(txn, cred, parent, true);
  if (!dir.ok()) {
    if (passed_on(dir.status())) return dir.status();
    *err = dir.status().error();
    return Status::Ok();
  }
  if (!S_ISDIR(dir->attr.mode)) {
    *err = ENOTDIR;
    return Status::Ok();
  }
  // The walk searches the directory before it looks at the last name.
  if (Status search = m.fs->Access(txn, cred, parent, X_OK); !search.ok()) {
    if (passed_on(search)) return search;
    *err = EACCES;
    return Status::Ok();
  }
  if (check.must_be_free) {
    auto last = m.fs->GetStat(txn, cred, path, false);
    if (!last.ok() && passed_on(last.status())) return last.status();
    if (last.ok()) *err = EEXIST;
  }
  return Status::Ok();
}

// ServedPairCheck in a transaction of its own: 0, an errno, or -1 when a lock is held by
// another.
int ServedPairError(MountFs& m, const CallerTxn& caller, const schema::Cred& cred,
                    const std::string& rel, const PairCheck& check) {
  int err = 0;
  CallOutcome o = RunCall(m, caller, [&](schema::Transaction& txn) {
    return ServedPairCheck(m, txn, cred, rel, check, &err);
  });
  if (o.kind == CallOutcome::Kind::kConflict) return -1;
  if (o.kind == CallOutcome::Kind::kStorage) return EIO;
  // A name that leaves the mount is on another file system anyway.
  return err == EXDEV ? 0 : err;
}

}  // namespace

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

Decision OnHostPair(Thread& t, SyscallRegs& call, const int args[2], const Target targets[2],
                    const std::function<Decision(int, const std::string&)>& substitute,
                    host::HostHandler& host, const host::Creds& creds) {
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
      with.set_arg(args[i], addr);
    }
    return host.PerformInstead(t, with, creds);
  }
  Decision d = substitute(args[0], targets[0].path);
  if (d.kind != Decision::Kind::kObserveExit) return d;
  return substitute(args[1], targets[1].path);
}

namespace {

// readlink of a served descriptor's link in /proc: `link`, the file's name, not its
// placeholder's.
Decision ReadlinkServedFd(Thread& t, const SyscallRegs& call, const std::string& link) {
  const bool at = call.nr() == SYS_readlinkat;
  const size_t size = static_cast<size_t>(static_cast<int>(at ? call.arg(3) : call.arg(2)));
  const size_t len = std::min(size, link.size());
  if (WriteMemory(*t.proc, at ? call.arg(2) : call.arg(1), link.data(), len) != 0)
    return Decision::Emulate(-EFAULT);
  return Decision::Emulate(static_cast<long>(len));
}

// A rename on the host that would move a mount point's host directory, or one above it, away
// from the mount (mount_dirs.h): the kernel refuses to move a mount point with EBUSY.
bool MovesMountDirectory(MountDirs& dirs, pid_t tid, const SyscallRegs& call,
                         const PathArg paths[2], const Target targets[2]) {
  const bool exchange = call.nr() == SYS_renameat2 && (call.arg(4) & RENAME_EXCHANGE);
  for (int i = 0; i < 2; ++i) {
    if (targets[i].kind != Target::Kind::kHost && targets[i].kind != Target::Kind::kSubstitute) {
      continue;
    }
    const bool sub = targets[i].kind == Target::Kind::kSubstitute;
    if (dirs.Named(tid, sub ? AT_FDCWD : paths[i].dirfd, sub ? targets[i].path : paths[i].path,
                   i == 0 || exchange)) {
      return true;
    }
  }
  return false;
}

}  // namespace

Decision MountHandler::PathCallOnDescriptor(Thread& t, SyscallRegs& call, int fd, bool null_path,
                                            int arg, const PathExtras& extras) {
  // The descriptor itself: the kernel's unless it is served (it reports EBADF too).
  std::shared_ptr<ServedFile> f = ServedOf(t, fd);
  if (!f) return Decision::Pass();
  // futimens takes the descriptor with fdget(), which an O_PATH descriptor does not pass.
  if (null_path && TimesOnDescriptor(call.nr(), call) && (f->flags & O_PATH)) {
    return Decision::Emulate(-EBADF);
  }
  Target target;
  target.kind = Target::Kind::kFile;
  target.file = f;
  target.mfs = f->mfs;
  return ServePath(t, call, &target, 1, &arg, extras);
}

std::optional<Decision> MountHandler::ThroughFdLinks(Thread& t, SyscallRegs& call,
                                                     const SyscallInfo& info,
                                                     const std::string& path, int n,
                                                     Target* targets) {
  const long nr = info.nr;
  // The link of a served descriptor in /proc names the file, not its placeholder.
  if ((nr == SYS_readlink || nr == SYS_readlinkat) && targets[0].kind == Target::Kind::kHost) {
    if (std::optional<std::string> link = ServedFdLink(t, path)) {
      return ReadlinkServedFd(t, call, *link);
    }
  }
  // chmod("/proc/self/fd/N") is how the C library changes an O_PATH descriptor's file, and
  // linkat of it with AT_SYMLINK_FOLLOW how a file opened with O_TMPFILE gets its name.
  if (n == 1 || nr == SYS_linkat) {
    uint64_t regs[6];
    for (int i = 0; i < 6; ++i) regs[i] = call.arg(i);
    FollowServedFdLink(t, path, FollowsLastLink(info, regs), &targets[0]);
  }
  // readlinkat of an empty path names the directory itself, which is no link.
  if ((nr == SYS_readlink || nr == SYS_readlinkat) && path.empty() &&
      targets[0].kind == Target::Kind::kServed) {
    return Decision::Emulate(-ENOENT);
  }

  return std::nullopt;
}

Decision MountHandler::PathPair(Thread& t, SyscallRegs& call, Target* targets, int* args,
                                const PathExtras& extras,
                                const std::function<int(int)>& pair_error) {
  auto on_host = [](const Target& x) {
    return x.kind == Target::Kind::kHost || x.kind == Target::Kind::kSubstitute;
  };
  auto substitute = [&](int arg, const std::string& path) {
    return Substitute(t, call, arg, path);
  };
  if (on_host(targets[0]) && on_host(targets[1])) {
    return OnHostPair(t, call, args, targets, substitute, host_, HostCredsOf(t));
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
    // Moving a mount point itself elsewhere: busy, as Linux says of one (not EXDEV, which would
    // have mv copy the whole mount out and empty it).
    const long nr = call.nr();
    if (nr != SYS_link && nr != SYS_linkat && targets[0].kind == Target::Kind::kServed &&
        (targets[0].path == "/" || targets[0].path.empty())) {
      return Decision::Emulate(-EBUSY);
    }
    return Decision::Emulate(-EXDEV);
  }
  return ServePath(t, call, targets, 2, args, extras);
}

Decision MountHandler::PathCall(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  const SyscallInfo* info = FindSyscall(nr);
  if (!info || !IsPathCall(*info)) return Decision::Pass();
  DecodedPathCall decoded;
  if (std::optional<Decision> d = DecodePathCall(t, *info, call, &decoded)) return *d;
  PathArg* paths = decoded.paths;
  const int n = decoded.n;
  if (decoded.on_descriptor) {
    return PathCallOnDescriptor(t, call, paths[0].dirfd, paths[0].null, paths[0].arg,
                                decoded.extras);
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
      return HostPairError(t, HostCredsOf(t), HostCwd(t), paths[i], targets[i], check);
    }
    if (targets[i].kind != Target::Kind::kServed) return 0;
    return ServedPairError(*targets[i].mfs, caller_txn_, CredOf(t), targets[i].path, check);
  };
  uint64_t regs[6];
  for (int i = 0; i < 6; ++i) regs[i] = call.arg(i);
  for (int i = 0; i < n; ++i) {
    int err = paths[i].read_err;
    // getname() refuses an empty path before the directory descriptor is looked at.
    if (!err && paths[i].path.empty() && !paths[i].empty_ok && !paths[i].null) err = ENOENT;
    if (!err) {
      err = -Resolve(t, paths[i].dirfd, paths[i].path, paths[i].empty_ok,
                     LastNameOf(*info, regs, i), &targets[i]);
    }
    if (err) {
      // The first path of a rename or link is looked up before the second is read.
      const int first = i == 1 ? pair_error(0) : 0;
      if (first < 0) return Conflict();
      return Decision::Emulate(-(first ? first : err));
    }
    args[i] = paths[i].arg;
  }
  if (std::optional<Decision> d = ThroughFdLinks(t, call, *info, paths[0].path, n, targets)) {
    return *d;
  }

  if (n == 2 && (nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2)) {
    if (MovesMountDirectory(mount_dirs_, t.tid, call, paths, targets)) {
      return Decision::Emulate(-EBUSY);
    }
    // A directory above some process's cwd may move: every cached host cwd is read again.
    if (on_host(targets[0])) {
      ++host_renames_;
      renamer_ = t.tid;
    }
  }
  if (n == 2) return PathPair(t, call, targets, args, decoded.extras, pair_error);
  switch (targets[0].kind) {
    case Target::Kind::kHost:
      return Decision::Pass();
    case Target::Kind::kSubstitute:
      return Substitute(t, call, args[0], targets[0].path);
    default:
      return ServePath(t, call, targets, n, args, decoded.extras);
  }
}

Decision MountHandler::ServePath(Thread& t, SyscallRegs& call, Target* targets, int n,
                                 int* path_args, const PathExtras& extras, int reruns) {
  return ServedPathCall(*this, t, call, targets, n, path_args, extras, reruns).Serve();
}

}  // namespace amino::monitor::service
