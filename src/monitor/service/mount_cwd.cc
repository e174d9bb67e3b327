// The cwd and the root: chdir, fchdir, getcwd and chroot. Inside a mount the cwd is virtual (the
// kernel's cwd stays at the mount point's host directory); elsewhere it is the kernel's.
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

Decision MountHandler::Chdir(Thread& t, SyscallRegs& call) {
  std::string path;
  if (int err = ReadString(*t.proc, call.arg(0), PATH_MAX, &path)) return Decision::Emulate(-err);
  Target target;
  if (int err = Resolve(t, AT_FDCWD, path, false, LastName::kFollow, &target))
    return Decision::Emulate(err);
  // chdir("/proc/self/cwd"), chdir("/dev/fd/N"): the served directory the link stands for.
  FollowServedFdLink(t, path, true, &target);
  // A removed directory: "." from a removed cwd, or the link of a descriptor of one.
  if (target.kind == Target::Kind::kFile) {
    if (!target.file->is_dir()) return Decision::Emulate(-ENOTDIR);
    return ChdirToFile(t, call, *target.file);
  }
  if (target.kind == Target::Kind::kHost) {
    Pending p;
    p.kind = Pending::Kind::kChdir;
    p.original = call;
    pending_[t.tid] = std::move(p);
    return Decision::ObserveExit();
  }
  const schema::Cred cred = CredOf(t);
  schema::FileId id = 0;
  std::string dir;
  Decision d = RunOnTarget(
      t, call, target, 0,
      [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
        auto st = m.fs->GetStat(txn, cred, rel);
        if (!st.ok()) return st.status();
        if (!S_ISDIR(st->attr.mode)) return schema::Status::Errno(ENOTDIR);
        AMINO_RETURN_IF_ERROR(m.fs->Access(txn, cred, rel, X_OK));
        id = st->ino;
        auto names = m.fs->Names(txn, id);
        if (!names.ok()) return names.status();
        if (names->empty()) return schema::Status::Errno(ENOENT);
        dir = names->front();
        return m.fs->Reopen(txn, id);  // the cwd's hold (CwdHold)
      },
      [] { return 0L; });
  if (d.kind == Decision::Kind::kObserveExit) {
    // The walk left the mount: the kernel changes directory with the substitute.
    pending_[t.tid].kind = Pending::Kind::kChdir;
    return d;
  }
  if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
  return EnterVirtualDir(t, call, *target.mfs, id, dir, dir, CwdHold(t, *target.mfs, id));
}

std::shared_ptr<ServedFile> MountHandler::CwdHold(Thread& t, MountFs& m, schema::FileId id) {
  auto hold = std::make_shared<ServedFile>();
  hold->mfs = &m;
  hold->id = id;
  hold->type = S_IFDIR;
  hold->flags = O_PATH | O_DIRECTORY;
  hold->counted = true;           // released (closed) when the last cwd on it goes
  txns_.NoteOpened(t.tid, hold);  // inside an application transaction: undone if it aborts
  return hold;
}

Decision MountHandler::EnterVirtualDir(Thread& t, SyscallRegs& call, MountFs& m, schema::FileId id,
                                       const std::string& dir, const std::string& last_path,
                                       std::shared_ptr<ServedFile> hold) {
  // The kernel goes to the mount point's host directory (something real to hold, and where
  // calls that are not trapped find the mount's host side); the cwd becomes virtual. After a
  // chroot the kernel names it from the process's root; where the root does not reach it, the
  // kernel's cwd stays.
  Decision restart;
  if (!EnsureRegion(t, call, &restart)) return restart;
  const std::string kernel_dir = PathFromRoot(RootOf(t), m.mount->host_point).value_or(".");
  uint64_t addr = t.proc->region->Put(t.tid, 0, kernel_dir + '\0');
  if (!addr) return Decision::Emulate(-ENAMETOOLONG);
  Pending p;
  p.kind = Pending::Kind::kVirtualChdir;
  p.original = call;
  p.cwd.mount = MountIndex(&m);
  p.cwd.id = id;
  p.cwd.path = dir;
  p.cwd.generation = m.dir_generation;
  p.cwd.last = dir.empty() ? last_path : dir;
  p.cwd.hold = std::move(hold);
  pending_[t.tid] = std::move(p);
  call.regs.orig_rax = SYS_chdir;
  call.regs.rdi = addr;
  return Decision::ObserveExit();
}

Decision MountHandler::Fchdir(Thread& t, SyscallRegs& call) {
  const int fd = static_cast<int>(call.arg(0));
  if (auto f = ServedOf(t, fd)) {
    if (!f->is_dir()) return Decision::Emulate(-ENOTDIR);
    return ChdirToFile(t, call, *f);
  }
  Pending p;
  p.kind = Pending::Kind::kChdir;
  p.original = call;
  pending_[t.tid] = std::move(p);
  return Decision::ObserveExit();
}

Decision MountHandler::ChdirToFile(Thread& t, SyscallRegs& call, ServedFile& f) {
  const schema::Cred cred = CredOf(t);
  // A directory removed while open is still a working directory, as in Linux: relative
  // paths from it then fail with ENOENT and getcwd too (the virtual cwd has no path).
  const std::string dir = DirPath(f);
  Decision d = RunOnFile(
      f,
      [&](schema::Transaction& txn) {
        AMINO_RETURN_IF_ERROR(f.mfs->fs->FAccess(txn, cred, f.id, X_OK));
        return f.mfs->fs->Reopen(txn, f.id);  // the cwd's hold (CwdHold)
      },
      [] { return 0L; });
  if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
  return EnterVirtualDir(t, call, *f.mfs, f.id, dir, f.opened_name, CwdHold(t, *f.mfs, f.id));
}

Decision MountHandler::Getcwd(Thread& t, SyscallRegs& call) {
  if (!t.proc->fs->cwd.is_virtual()) return Decision::Pass();
  const std::string dir = CwdPath(t);
  std::string path = dir.empty() ? dir : CwdMount(t).mount->HostPathOf(dir);
  if (!path.empty()) path = CwdFromRoot(RootOf(t), path);
  const long length = GetcwdLength(path, static_cast<size_t>(call.arg(1)));
  if (length < 0) return Decision::Emulate(length);
  if (WriteMemory(*t.proc, call.arg(0), path.c_str(), static_cast<size_t>(length)) != 0)
    return Decision::Emulate(-EFAULT);
  return Decision::Emulate(length);
}

Decision MountHandler::Chroot(Thread& t, SyscallRegs& call) {
  // Whatever comes of the call, the root is asked of the kernel from now on (RootOf): a failed
  // chroot leaves it where it was.
  t.proc->fs->root_changed = true;
  std::string path;
  if (ReadString(*t.proc, call.arg(0), PATH_MAX, &path) != 0) return Decision::Pass();
  const bool virtual_base = WalkStartsInMount(t, AT_FDCWD, path);
  Target target;
  if (int err = Resolve(t, AT_FDCWD, path, false, LastName::kFollow, &target)) {
    return virtual_base ? Decision::Emulate(err) : Decision::Pass();
  }
  if (target.kind == Target::Kind::kHost) return Decision::Pass();
  // Where the path leads is the schema's walk: a directory of the mount, or, where a link or
  // ".." leaves it, a host directory, which the kernel is given by its host path (RunOnTarget;
  // chroot always stops: NeedsStop).
  bool reached = false;
  bool at_root = false;
  const schema::Cred cred = CredOf(t);
  PathBody body = [&](MountFs& m, schema::Transaction& txn, const std::string& rel) -> Status {
    auto st = m.fs->GetStat(txn, cred, rel, true);
    if (!st.ok()) return st.status();
    if (!S_ISDIR(st->attr.mode)) return Status::Errno(ENOTDIR);
    AMINO_RETURN_IF_ERROR(m.fs->Access(txn, cred, rel, X_OK, true));
    reached = true;
    at_root = st->ino == schema::kRootId;
    return Status::Ok();
  };
  Decision d = RunOnTarget(t, call, target, 0, body, [] { return 0L; });
  if (!reached) return d;  // failed, parked, or a host directory outside the mount
  // A mount's root: the kernel makes the mount point's host directory the root, and the mount
  // is served from there on (HostPathInRoot).
  if (at_root) return Substitute(t, call, 0, target.mfs->mount->host_point);
  // A directory inside a mount has no host directory for the kernel to make the root.
  return Decision::Emulate(-EPERM);
}

}  // namespace amino::monitor::service
