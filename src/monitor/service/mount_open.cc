// Opens of served files: the path resolved, the file opened in the schema, and the tracee given
// a placeholder descriptor (a shadow) that stands for it.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <span>
#include <string>

#include "monitor/calls/validate.h"
#include "monitor/remote_syscall.h"
#include "monitor/service/file_locks.h"
#include "monitor/service/mount_handler.h"
#include "monitor/shadow_fds.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

namespace {

// How an open with `flags` treats its last name: it follows a link there, but not with
// O_NOFOLLOW, nor when it must create the file (O_CREAT | O_EXCL fails with EEXIST on a link).
LastName OpenLastName(int flags) {
  const bool follows = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
  return follows ? LastName::kFollow : LastName::kLookUp;
}

}  // namespace

// openat2: its open_how checked as the kernel does before it looks at the path; the RESOLVE_*
// rules applied to a path that leads into a mount.
Decision MountHandler::OpenAt2(Thread& t, SyscallRegs& call) {
  const int a0 = static_cast<int>(call.arg(0));
  // The kernel checks the structure before the path.
  const uint64_t size = call.arg(3);
  if (int err = calls::ValidateOpenHowSize(size)) return Decision::Emulate(-err);
  std::vector<unsigned char> raw(size);
  if (ReadMemory(*t.proc, call.arg(2), raw.data(), raw.size()) != 0)
    return Decision::Emulate(-EFAULT);
  open_how how{};
  std::memcpy(&how, raw.data(), sizeof how);
  if (int err = calls::ValidateOpenHowTail(std::span(raw).subspan(sizeof how)))
    return Decision::Emulate(-err);
  if (int err = calls::ValidateOpenHow(how)) return Decision::Emulate(-err);
  if (how.resolve != 0) {
    // Where no mount is involved the RESOLVE_* rules are the kernel's; a path into a mount
    // is checked against them here, then opened as any other.
    std::string path;
    Target target;
    if (ReadString(*t.proc, call.arg(1), PATH_MAX, &path) != 0) return Decision::Pass();
    if (int err = Resolve(t, a0, path, false, OpenLastName(static_cast<int>(how.flags)), &target)) {
      // The kernel reports its own errors, but it would be given a placeholder for a
      // served directory, and knows nothing of a virtual cwd.
      const bool served_base = a0 == AT_FDCWD ? t.proc->fs->cwd.is_virtual() : !!ServedOf(t, a0);
      return served_base ? Decision::Emulate(err) : Decision::Pass();
    }
    if (target.kind == Target::Kind::kHost) return Decision::Pass();
    if (target.kind == Target::Kind::kServed) {
      if (int err = CheckResolveRules(t, a0, path, how.resolve, target))
        return Decision::Emulate(err);
    }
  }
  return Open(t, call, a0, call.arg(1), static_cast<int>(how.flags), static_cast<mode_t>(how.mode),
              1);
}

Decision MountHandler::Open(Thread& t, SyscallRegs& call, int dirfd, uint64_t path_addr, int flags,
                            mode_t mode, int path_arg) {
  if (call.nr() != SYS_openat2) {
    const open_how how = calls::OpenHowOf(static_cast<unsigned>(flags), mode);
    if (int err = calls::ValidateOpenHow(how)) return Decision::Emulate(-err);
    // open and openat ignore what O_PATH does not permit (O_TMPFILE's own bit among them).
    if (flags & O_PATH) flags = static_cast<int>(how.flags);
  }
  std::string path;
  if (int err = ReadString(*t.proc, path_addr, PATH_MAX, &path)) return Decision::Emulate(-err);
  Target target;
  if (int err = Resolve(t, dirfd, path, false, OpenLastName(flags), &target))
    return Decision::Emulate(err);
  // Opening a served descriptor's link in /proc opens its file anew.
  FollowServedFdLink(t, path, !(flags & O_NOFOLLOW), &target);
  switch (target.kind) {
    case Target::Kind::kHost:
      return Decision::Pass();
    case Target::Kind::kSubstitute:
      return Substitute(t, call, path_arg, target.path);
    case Target::Kind::kFile:
      if (target.file && target.file->is_dir()) return OpenDeadDir(t, call, *target.file, flags);
      return Decision::Emulate(-ENOENT);
    case Target::Kind::kServed:
      break;
  }
  return OpenServed(t, call, target, flags, mode, path_arg);
}

Decision MountHandler::OpenDeadDir(Thread& t, SyscallRegs& call, ServedFile& dir, int flags) {
  // may_open() on a directory: no creating, writing or truncating it.
  if ((flags & O_CREAT) ||
      (!(flags & O_PATH) && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)))) {
    return Decision::Emulate(-EISDIR);
  }
  Decision restart;
  if (!call.notified && !EnsureRegion(t, call, &restart)) return restart;
  const schema::Cred cred = CredOf(t);
  Decision d = RunOnFile(
      dir,
      [&](schema::Transaction& txn) {
        if (!(flags & O_PATH)) AMINO_RETURN_IF_ERROR(dir.mfs->fs->FAccess(txn, cred, dir.id, R_OK));
        return dir.mfs->fs->Reopen(txn, dir.id);
      },
      [] { return 0L; });
  if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
  auto file = std::make_shared<ServedFile>();
  file->mfs = dir.mfs;
  file->id = dir.id;
  file->type = S_IFDIR;
  file->flags = flags & O_PATH ? flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW)
                               : flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC);
  file->opened_name = dir.opened_name;
  file->counted = true;  // by the Reopen just committed
  txns_.NoteOpened(t.tid, file);
  return InstallShadow(t, call, std::move(file));
}

Decision MountHandler::OpenServed(Thread& t, SyscallRegs& call, Target& target, int flags,
                                  mode_t mode, int path_arg) {
  Decision restart;
  if (!call.notified && !EnsureRegion(t, call, &restart)) return restart;
  auto file = std::make_shared<ServedFile>();
  const schema::Cred cred = CredOf(t);
  const mode_t create_mode = mode & 07777;  // the schema applies the umask (or a default ACL)
  const mode_t umask = UmaskOf(t);
  file->flags = flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_CLOEXEC);
  if (flags & O_PATH) file->flags = flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW);  // as F_GETFL
  MountFs* node_fs = nullptr;  // a FIFO or device node, opened by the kernel (mount_nodes.cc)
  schema::Stat node;
  PathBody body = [&](MountFs& m, schema::Transaction& txn, const std::string& rel) {
    file->mfs = &m;
    if ((flags & O_TMPFILE) == O_TMPFILE) {
      auto r = m.fs->Open(txn, cred, rel, flags, create_mode, umask);
      if (!r.ok()) return r.status();
      file->id = r->id;
      file->type = S_IFREG;
      file->linkable = !(flags & O_EXCL);
      file->counted = true;
      // What /proc/PID/fd shows for it, as Linux: "DIR/#INO (deleted)".
      file->opened_name = (rel == "/" ? std::string() : rel) + "/#" + std::to_string(r->id);
      return schema::Status::Ok();
    }
    if (flags & O_PATH) {
      auto r = m.fs->Open(txn, cred, rel, flags);
      if (!r.ok()) return r.status();
      file->id = r->id;
      file->type = r->stat.attr.mode & S_IFMT;
      file->counted = true;
      return schema::Status::Ok();
    }
    auto r = m.fs->Open(txn, cred, rel, flags, create_mode, umask);
    if (!r.ok()) return r.status();
    file->id = r->id;
    file->type = r->stat.attr.mode & S_IFMT;
    if (S_ISREG(file->type) && !r->path.empty()) {
      file->opened_name = r->path;  // as Linux, the name it was opened by (of a hard link too)
    } else if (auto names = m.fs->Names(txn, r->id); names.ok() && !names->empty()) {
      file->opened_name = names->front();
    }
    file->counted = true;
    if (S_ISFIFO(file->type) || S_ISCHR(file->type) || S_ISBLK(file->type)) {
      // The access is granted; the descriptor will be the kernel's, not a served one, so the
      // schema does not count it as open.
      AMINO_RETURN_IF_ERROR(m.fs->Close(txn, r->id));
      file->counted = false;
      node_fs = &m;
      node = r->stat;
      return schema::Status::Ok();
    }
    if (!S_ISREG(file->type) && !S_ISDIR(file->type)) return schema::Status::Errno(ENXIO);
    return schema::Status::Ok();
  };
  bool opened = false;
  Decision d = RunOnTarget(t, call, target, path_arg, body, [&] {
    opened = true;
    return 0L;
  });
  if (!opened) {
    file->counted = false;  // the transaction that counted the open was aborted
    return d;
  }
  if (node_fs) return OpenNode(t, call, *node_fs, node, flags);
  txns_.NoteOpened(t.tid, file);  // inside an application transaction: undone if it aborts
  // O_TRUNC truncates whatever the access mode (Linux does, for O_RDONLY too).
  if ((flags & O_TRUNC) && S_ISREG(file->type) && !(flags & O_PATH)) {
    shared_maps_.Resized(*file->mfs, file->id, 0);
  }
  return InstallShadow(t, call, std::move(file));
}

namespace {

// The placeholder shows the access mode and status flags of the open it stands for, so that
// /proc/PID/fdinfo (lsof, a shell's own checks) shows them. Directories and O_PATH keep the
// plain placeholder (a memfd is neither).
// The flags the placeholder of `file` shows; -1 when the plain one (O_RDWR) does.
int ShownFlags(const ServedFile& file) {
  constexpr int kShown = O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME;
  if (!S_ISREG(file.type) || (file.flags & O_PATH) || (file.flags & kShown) == O_RDWR) return -1;
  return file.flags & kShown;
}

}  // namespace

Decision MountHandler::InstallShadow(Thread& t, SyscallRegs& call,
                                     std::shared_ptr<ServedFile> file) {
  bool want_cloexec = false;
  switch (call.nr()) {
    case SYS_open:
      want_cloexec = call.arg(1) & O_CLOEXEC;
      break;
    case SYS_openat:
      want_cloexec = call.arg(2) & O_CLOEXEC;
      break;
    case SYS_openat2: {
      open_how how{};
      if (ReadMemory(*t.proc, call.arg(2), &how, sizeof how) == 0)
        want_cloexec = how.flags & O_CLOEXEC;
      break;
    }
    default:
      break;
  }
  if (call.notified) {
    const PlaceholderPool::Placeholder made = placeholders_.Take(ShownFlags(*file));
    if (made.fd < 0) return Decision::Emulate(made.fd);
    host::ScopedFd placeholder(made.fd);
    file->placeholder_ino = made.ino;
    long fd = listener_->ReplyWithFd(call.notification_id, placeholder.get(), want_cloexec);
    if (fd == -ENOENT) return Decision::Replied();
    if (fd < 0) return Decision::Emulate(fd);
    descriptors_.Known(file);
    t.proc->fds->files[static_cast<int>(fd)] = std::move(file);
    return Decision::Replied();
  }
  uint64_t name = t.proc->region->Put(t.tid, 0, std::string_view("amino", 6));
  if (!name) return Decision::Emulate(-EMFILE);
  Pending p;
  p.kind = Pending::Kind::kPlaceholder;
  p.original = call;
  p.file = std::move(file);
  pending_[t.tid] = std::move(p);
  call.regs.orig_rax = SYS_memfd_create;
  call.regs.rdi = name;
  call.regs.rsi = want_cloexec ? MFD_CLOEXEC : 0;
  return Decision::ObserveExit();
}

void MountHandler::ShowOpenFlags(Thread& t, const SyscallRegs& call, const ServedFile& file,
                                 int fd) {
  const int shown = ShownFlags(file);
  if (shown < 0 || !t.proc->region) return;
  // As WithOpenFlags, in the tracee: its placeholder reopened through /proc with the flags and
  // put in the same slot, keeping close-on-exec as the memfd_create made it.
  const uint64_t name = t.proc->region->Put(t.tid, 0, "/proc/self/fd/" + std::to_string(fd) + '\0');
  if (!name) return;
  RemoteSyscalls rs(t, call, true, exit_sink_, listener_);
  const long reopened = rs.Call(SYS_openat, static_cast<uint64_t>(AT_FDCWD), name,
                                static_cast<uint64_t>(shown | O_CLOEXEC));
  if (reopened >= 0) {
    // The memfd_create's flags are still in its argument register at its exit.
    const uint64_t cloexec = call.regs.rsi & MFD_CLOEXEC ? O_CLOEXEC : 0;
    rs.Call(SYS_dup3, static_cast<uint64_t>(reopened), static_cast<uint64_t>(fd), cloexec);
    rs.Call(SYS_close, static_cast<uint64_t>(reopened));
  }
  rs.Restore();
}

}  // namespace amino::monitor::service
