// Path arguments to targets (the kernel, a substitute host path, or a mount's schema), and
// the per-call transaction with escapes followed. /proc links: mount_proc_links.cc; the cwd:
// mount_cwd.cc.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <string>

#include "monitor/calls/validate.h"
#include "monitor/changed_root.h"
#include "monitor/mounts/proc_link.h"
#include "monitor/service/mount_handler.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

// `abs` as the monitor must name it to reach what the tracee `t` reaches: /proc/self,
// /proc/thread-self and /dev/fd are the monitor's own in its walks.
std::string AsTraceeSees(const Thread& t, std::string abs) {
  auto under = [&](std::string_view prefix) {
    return abs.starts_with(prefix) && (abs.size() == prefix.size() || abs[prefix.size()] == '/');
  };
  if (!abs.starts_with("/proc/") && !abs.starts_with("/dev/fd")) return abs;  // most paths
  const std::string self = "/proc/" + std::to_string(t.proc->tgid);
  if (under("/proc/self")) return self + abs.substr(10);
  if (under("/proc/thread-self")) return self + "/task/" + std::to_string(t.tid) + abs.substr(17);
  if (under("/dev/fd")) return self + "/fd" + abs.substr(7);
  return abs;
}

}  // namespace

MountFs* MountHandler::FsFor(const mounts::Mount* m) {
  for (auto& fs : mounts_) {
    if (fs->mount == m) return fs.get();
  }
  return nullptr;
}

std::optional<std::string> MountHandler::PathOfId(MountFs& m, schema::FileId id) {
  std::string path;
  CallOutcome o = RunCall(m, [&](schema::Transaction& txn) {
    auto names = m.fs->Names(txn, id);
    if (!names.ok()) return names.status();
    if (!names->empty()) path = names->front();
    return schema::Status::Ok();
  });
  if (o.kind != CallOutcome::Kind::kDone) return std::nullopt;
  return o.status.ok() ? path : std::string();
}

std::string MountHandler::DirPath(ServedFile& f) {
  if (f.path_generation != f.mfs->dir_generation) {
    std::optional<std::string> now = PathOfId(*f.mfs, f.id);
    if (!now) return std::string();  // not readable now: asked again next time
    f.dir_path = std::move(*now);
    f.path_generation = f.mfs->dir_generation;
    // What /proc shows for it, "(deleted)" once removed, is its last name, as in Linux.
    if (!f.dir_path.empty()) f.opened_name = f.dir_path;
  }
  return f.dir_path;
}

MountFs& MountHandler::CwdMount(Thread& t) {
  return *mounts_[static_cast<size_t>(t.proc->fs->cwd.mount())];
}

std::string MountHandler::CwdPath(Thread& t) {
  MountFs& m = CwdMount(t);
  return t.proc->fs->cwd.Path(m.dir_generation, [&](schema::FileId id) { return PathOfId(m, id); });
}

const std::string& MountHandler::HostCwd(Thread& t) {
  return t.proc->fs->cwd.HostPath(
      host_renames_, [&] { return host::ReadLink("/proc/" + std::to_string(t.tid) + "/cwd"); });
}

std::string MountHandler::RootOf(Thread& t) {
  if (!t.proc->fs->root_changed) return "/";
  std::string root = host::ReadLink("/proc/" + std::to_string(t.tid) + "/root");
  return root.empty() || root[0] != '/' ? "/" : root;
}

std::string MountHandler::EscapeFrom(const Target& target, const std::string& escaped) {
  if (escaped.empty() || escaped[0] != '/') return escaped;
  return HostPathInRoot(target.root, escaped);
}

std::optional<Result<mounts::ClassifiedPath>> MountHandler::LinksIntoMount(const std::string& root,
                                                                           const std::string& abs,
                                                                           bool follow_last) {
  if (root == "/") return host_links_.IntoMount(abs, follow_last);
  // After a chroot the kernel walks the process's own name for it from its root.
  const std::optional<std::string> own = PathFromRoot(root, abs);
  if (!own) return std::nullopt;  // beyond its root: the kernel's walk never gets there
  return host_links_.IntoMount(*own, follow_last, root);
}

namespace {

// `host_path` (the monitor's name) opened O_PATH as a process whose root is `root` walks it:
// after a chroot an absolute link on the way leads from that root, and ".." stops there
// (RESOLVE_IN_ROOT). -1 with errno on failure.
int OpenAsWalkedFrom(const std::string& root, const std::string& host_path) {
  if (root == "/") return open(host_path.c_str(), O_PATH | O_CLOEXEC);
  const std::optional<std::string> own = PathFromRoot(root, host_path);
  if (!own) {
    errno = ENOENT;
    return -1;
  }
  host::ScopedFd root_fd(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return -1;
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT;
  return static_cast<int>(syscall(SYS_openat2, root_fd.get(), own->c_str(), &how, sizeof how));
}

}  // namespace

int MountHandler::WhereDotDotLeads(Thread& t, const mounts::ClassifiedPath& r,
                                   std::string* kernel_dir) {
  const std::string root = RootOf(t);
  host::AsTracee as(HostCredsOf(t));
  host::ScopedFd dir(OpenAsWalkedFrom(root, r.check_path));
  if (dir.get() < 0) return -errno;
  host::ScopedFd expect(OpenAsWalkedFrom(root, r.check_expect));
  struct stat seen, expected;
  if (fstat(dir.get(), &seen) != 0) return -errno;
  if (expect.get() >= 0 && fstat(expect.get(), &expected) == 0 && seen.st_dev == expected.st_dev &&
      seen.st_ino == expected.st_ino) {
    return 0;
  }
  *kernel_dir = host::ReadLink("/proc/self/fd/" + std::to_string(dir.get()));
  return 0;
}

std::shared_ptr<ServedFile> MountHandler::CwdDir(Thread& t) {
  const WorkingDir& cwd = t.proc->fs->cwd;
  auto dir = std::make_shared<ServedFile>();
  dir->mfs = &CwdMount(t);
  dir->id = cwd.id();
  dir->type = S_IFDIR;
  dir->flags = O_RDONLY | O_DIRECTORY;
  dir->opened_name = cwd.last_path();
  return dir;
}

std::optional<int> MountHandler::WalkBaseOf(Thread& t, int dirfd, const std::string& given,
                                            bool empty_ok, Target* out, WalkBase* base) {
  // A removed base directory (the cwd or a directory descriptor) has only itself and its
  // parent left to walk to.
  std::shared_ptr<ServedFile> removed;
  if (!given.empty() && given[0] != '/') {
    if (dirfd == AT_FDCWD) {
      if (t.proc->fs->cwd.is_virtual() && CwdPath(t).empty()) removed = CwdDir(t);
    } else if (auto f = ServedOf(t, dirfd); f && f->is_dir() && DirPath(*f).empty()) {
      removed = std::move(f);
    }
  }
  if (removed) {
    WalkFromRemoved walk = WalkFromRemovedDir(removed->opened_name, given);
    if (walk.kind == WalkFromRemoved::Kind::kNowhere) return -ENOENT;
    if (walk.kind == WalkFromRemoved::Kind::kItself) {
      out->kind = Target::Kind::kFile;
      out->mfs = removed->mfs;
      out->file = std::move(removed);
      return 0;
    }
    base->path = std::move(walk.rest);
    base->virtual_dir = std::move(walk.dir);
    base->mount = removed->mfs->mount;
    return std::nullopt;
  }
  base->path = given;
  const std::string& path = given;
  if (!path.empty() && path[0] == '/') {
    base->host_dir = "/";
  } else if (dirfd == AT_FDCWD) {
    if (!t.proc->fs->cwd.is_virtual()) {
      base->host_dir = HostCwd(t);
      if (base->host_dir.empty() || base->host_dir[0] != '/')
        return 0;  // unreachable: the kernel's
      return std::nullopt;
    }
    base->virtual_dir = CwdPath(t);
    base->mount = CwdMount(t).mount;
    if (base->virtual_dir.empty()) {  // removed: an empty path names it only with AT_EMPTY_PATH
      if (!empty_ok) return -ENOENT;
      out->kind = Target::Kind::kFile;
      out->mfs = &CwdMount(t);
      out->file = CwdDir(t);
      return 0;
    }
  } else if (auto f = ServedOf(t, dirfd)) {
    if (path.empty() && empty_ok) {
      out->kind = Target::Kind::kFile;
      out->file = f;
      out->mfs = f->mfs;
      return 0;
    }
    if (path.empty()) return -ENOENT;
    if (!f->is_dir()) return -ENOTDIR;
    base->virtual_dir = DirPath(*f);
    base->mount = f->mfs->mount;
  } else {
    if (dirfd < 0) return 0;  // the kernel reports EBADF
    std::string& dir = base->host_dir;
    dir = host::ReadLink("/proc/" + std::to_string(t.tid) + "/fd/" + std::to_string(dirfd));
    // A pipe, a socket or another object without a path is no directory to walk from (the
    // kernel's ENOTDIR, which a rename or link across file systems must say too).
    if (!dir.empty() && dir[0] != '/' && !path.empty()) return -ENOTDIR;
    // Not a directory by name (a removed directory): no mount below it.
    if (dir.empty() || dir[0] != '/' || dir.ends_with(" (deleted)")) return 0;
  }
  return std::nullopt;
}

int MountHandler::Resolve(Thread& t, int dirfd, const std::string& as_given, bool empty_ok,
                          LastName last, Target* out) {
  *out = Target();
  out->root = RootOf(t);
  std::string through;  // `as_given` with a /proc link replaced by what it stands for
  if (int err = ThroughProcLink(t, as_given, &through)) return err;
  // After a chroot an absolute path is the process's, from its root; a /proc link's is the
  // host's already.
  if (through.empty() && out->root != "/" && !as_given.empty() && as_given[0] == '/')
    through = HostPathInRoot(out->root, as_given, true);
  WalkBase walk;
  if (auto answer =
          WalkBaseOf(t, dirfd, through.empty() ? as_given : through, empty_ok, out, &walk))
    return *answer;
  const std::string& path = walk.path;
  const std::string& base_dir = walk.host_dir;
  mounts::PathBase base = walk.mount ? mounts::PathBase::Virtual(*walk.mount, walk.virtual_dir)
                                     : mounts::PathBase::Host(base_dir);
  auto r = resolver_.Classify(base, path, empty_ok);
  if (!r.ok()) return -r.status().error();
  out->follow_last = last == LastName::kFollow;
  out->host_links = true;
  if ((r->is_host() || !r->check_path.empty()) && !path.empty()) {
    // A host link on the path as written may lead into a mount: looked for on host results,
    // and before a lexical check of "x/..", since ".." after such a link is the mount's.
    std::string abs = path[0] == '/' ? path : base_dir == "/" ? "/" + path : base_dir + "/" + path;
    // A call that makes or removes the last name looks at the name itself, whatever slash
    // follows it (rmdir("link/") is the kernel's ENOTDIR).
    const bool slash = abs.size() > 1 && abs.back() == '/';
    if (last == LastName::kNever) {
      while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
    }
    if (auto in = LinksIntoMount(out->root, AsTraceeSees(t, std::move(abs)), out->follow_last)) {
      if (!in->ok()) return -in->status().error();
      r = std::move(*in);
      if (slash) r->trailing_slash = true;
    }
  }
  if (!r->check_path.empty()) {
    std::string kernel_dir;
    if (int err = WhereDotDotLeads(t, *r, &kernel_dir)) return err;
    if (!kernel_dir.empty()) {
      auto again = resolver_.Recheck(*r, kernel_dir, path);
      if (!again.ok()) return -again.status().error();
      r = std::move(again);
    }
  }
  out->trailing_slash = r->trailing_slash;
  if (r->is_host()) {
    out->kind = r->unchanged ? Target::Kind::kHost : Target::Kind::kSubstitute;
    out->path = r->path;
    return 0;
  }
  out->kind = Target::Kind::kServed;
  out->mfs = FsFor(r->mount);
  out->path = r->path;
  return 0;
}

int MountHandler::CheckResolveRules(Thread& t, int dirfd, const std::string& path, uint64_t resolve,
                                    const Target& target) {
  // Nothing in a mount is in the kernel's dentry cache: the caller retries without it.
  if (resolve & RESOLVE_CACHED) return -EAGAIN;
  // Whether the walk starts inside the mount (a virtual directory, or a host directory at or
  // below the mount point) or enters it from the host, crossing its mount point.
  bool inside = path.size() && path[0] != '/' &&
                ((dirfd == AT_FDCWD && t.proc->fs->cwd.is_virtual()) || ServedOf(t, dirfd));
  if (!inside && path.size() && path[0] != '/' && !ServedOf(t, dirfd)) {
    std::string base =
        dirfd == AT_FDCWD
            ? HostCwd(t)
            : host::ReadLink("/proc/" + std::to_string(t.tid) + "/fd/" + std::to_string(dirfd));
    inside = mount_table_.Find(base).has_value();
  }
  if ((resolve & RESOLVE_NO_XDEV) && !inside) return -EXDEV;
  if (resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT)) {
    // Lexically: an absolute path, or a ".." above the starting directory, leaves it. (IN_ROOT
    // would take both as relative to the directory; refused the same way here.)
    if (path.empty() || path[0] == '/') return -EXDEV;
    long depth = 0;
    size_t at = 0;
    while (at <= path.size()) {
      size_t end = path.find('/', at);
      if (end == std::string::npos) end = path.size();
      std::string_view c(path.data() + at, end - at);
      if (c == "..") {
        if (--depth < 0) return -EXDEV;
      } else if (!c.empty() && c != ".") {
        ++depth;
      }
      at = end + 1;
    }
  }
  if (resolve & (RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_IN_ROOT)) {
    // NO_SYMLINKS: no symbolic link may be met; BENEATH and IN_ROOT: none that could lead
    // out. Each component is looked at as the walk meets it.
    const schema::Cred cred = CredOf(t);
    int err = 0;
    CallOutcome o = RunCall(*target.mfs, [&](schema::Transaction& txn) {
      std::string prefix;
      size_t at = 1;
      while (at <= target.path.size()) {
        size_t end = target.path.find('/', at);
        if (end == std::string::npos) end = target.path.size();
        std::string_view c(target.path.data() + at, end - at);
        at = end + 1;
        if (c.empty()) continue;
        prefix += "/";
        prefix += c;
        if (c == "." || c == "..") continue;
        auto st = target.mfs->fs->GetStat(txn, cred, prefix, false);
        if (!st.ok()) break;  // the open reports it
        if (!S_ISLNK(st->attr.mode)) continue;
        // A last link the open does not follow (O_NOFOLLOW, O_CREAT | O_EXCL) is not walked:
        // the open's own rules answer for it (ENOTDIR for O_DIRECTORY, ELOOP, EEXIST).
        const bool last = target.path.find_first_not_of('/', end) == std::string::npos;
        if (last && !target.follow_last && !target.trailing_slash) break;
        if (resolve & RESOLVE_NO_SYMLINKS) {
          err = ELOOP;
          break;
        }
        // BENEATH, IN_ROOT: a link that cannot leave (relative, no "..") is followed.
        auto link = target.mfs->fs->Readlink(txn, cred, prefix);
        if (!link.ok() || link->empty() || (*link)[0] == '/' ||
            link->find("..") != std::string::npos) {
          err = EXDEV;
          break;
        }
      }
      return schema::Status::Ok();
    });
    if (o.kind == CallOutcome::Kind::kStorage) return -EIO;
    if (err) return -err;
  }
  return 0;
}

Decision MountHandler::Substitute(Thread& t, SyscallRegs& call, int arg,
                                  const std::string& host_path) {
  Decision restart;
  // After a chroot the kernel walks the substitute from the process's root, and a path beyond
  // that root is one no name of the process reaches.
  const std::optional<std::string> in_root = PathFromRoot(RootOf(t), host_path);
  if (!in_root) return Decision::Emulate(-ENOENT);
  if (call.notified) {
    // A notified call cannot be given other registers: the monitor performs it on the host
    // (as --emulate=host does), reading the substitute from the shared region. An open gives
    // the tracee a real descriptor of the host file.
    const long nr = call.nr();
    if (nr == SYS_open || nr == SYS_openat || nr == SYS_creat || nr == SYS_openat2) {
      open_how how{};
      if (int err = OpenHowOfCall(t, call, &how)) return Decision::Emulate(-err);
      return host_.OpenInstead(call, host_path, how, HostCredsOf(t));
    }
    if (!t.proc->region) return Decision::Emulate(-ENOMEM);
    uint64_t addr =
        t.proc->region->Put(t.tid, 4096 * static_cast<size_t>(arg & 3), host_path + '\0');
    if (!addr) return Decision::Emulate(-ENAMETOOLONG);
    SyscallRegs with = call;
    with.set_arg(arg, addr);
    // The substitute is absolute: the directory descriptor before it no longer counts, and
    // may be a served directory the host handler knows nothing of.
    const SyscallInfo* info = FindSyscall(call.nr());
    if (info && arg > 0 && info->args[arg - 1] == Arg::kDirFd) {
      with.set_arg(arg - 1, static_cast<uint64_t>(static_cast<int64_t>(AT_FDCWD)));
    }
    return host_.PerformInstead(t, with, HostCredsOf(t));
  }
  if (!EnsureRegion(t, call, &restart)) return restart;
  uint64_t addr = t.proc->region->Put(t.tid, 4096 * static_cast<size_t>(arg & 3), *in_root + '\0');
  if (!addr) return Decision::Emulate(-ENAMETOOLONG);
  auto it = pending_.find(t.tid);
  if (it == pending_.end() || it->second.kind != Pending::Kind::kRestore) {
    Pending p;
    p.kind = Pending::Kind::kRestore;
    p.original = call;
    pending_[t.tid] = std::move(p);
  }
  call.set_arg(arg, addr);
  return Decision::ObserveExit();
}

Decision MountHandler::Outcome(const CallOutcome& o, const Done& done) {
  switch (o.kind) {
    case CallOutcome::Kind::kConflict:
      return Conflict();
    case CallOutcome::Kind::kStorage:
      return Decision::Emulate(-EIO);
    case CallOutcome::Kind::kDone:
      break;
  }
  if (!o.status.ok()) return Decision::Emulate(-o.status.error());
  return Decision::Emulate(done());
}

Decision MountHandler::RunOnTarget(Thread& t, SyscallRegs& call, Target& target, int arg,
                                   const PathBody& body, const Done& done) {
  return RunOnTargetOr(target, body, done,
                       [&](const std::string& host) { return Substitute(t, call, arg, host); });
}

Decision MountHandler::RunOnTargetOr(Target& target, const PathBody& body, const Done& done,
                                     const std::function<Decision(const std::string&)>& on_host) {
  for (int hops = 0;; ++hops) {
    if (target.kind == Target::Kind::kHost) return Decision::Pass();
    if (target.kind == Target::Kind::kSubstitute) return on_host(target.path);
    if (target.kind != Target::Kind::kServed || !target.mfs) return Decision::Emulate(-EBADF);
    MountFs& m = *target.mfs;
    CallOutcome o = RunCall(m, [&](schema::Transaction& txn) { return body(m, txn, target.path); });
    const bool escaped = o.kind == CallOutcome::Kind::kDone && o.status.is_escape();
    if (!escaped) return Outcome(o, done);
    // A link or ".." left the mount: the rest of the walk continues from there.
    if (hops == mounts::kMaxEscapes) return Decision::Emulate(-ELOOP);
    const std::string& rest = o.status.escaped_path();
    auto next = resolver_.ContinueOnHost(*m.mount, EscapeFrom(target, rest));
    if (!next.ok()) return Decision::Emulate(-next.status().error());
    if (next->is_host() && target.host_links) {
      // The rest as written, from where it left: a host link on it may lead into a mount.
      // (An absolute one is the process's already, from its root: LinksIntoMount maps it back.)
      const std::string abs =
          rest[0] == '/' ? HostPathInRoot(target.root, rest) : m.mount->host_point + "/" + rest;
      if (auto in = LinksIntoMount(target.root, abs, target.follow_last)) {
        if (!in->ok()) return Decision::Emulate(-in->status().error());
        next = std::move(*in);
      }
    }
    target.trailing_slash = next->trailing_slash;
    target.path = next->path;
    if (next->is_host()) {
      target.kind = Target::Kind::kSubstitute;
    } else {
      target.mfs = FsFor(next->mount);
    }
  }
}

Decision MountHandler::RunOnFile(ServedFile& f, const FileBody& body, const Done& done) {
  return Outcome(RunCall(*f.mfs, body), done);
}

}  // namespace amino::monitor::service
