// Dispatch of trapped calls under Amino mounts; opens of served files and the life cycle of
// their shadow descriptors (dup, close, close_range, passing in SCM_RIGHTS, exec).
#include "monitor/service/mount_handler.h"

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

#include "amino/amino.h"
#include "monitor/calls/validate.h"
#include "monitor/remote_syscall.h"
#include "monitor/service/external_sync.h"
#include "monitor/service/file_locks.h"
#include "monitor/shadow_fds.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

schema::Result<std::unique_ptr<MountHandler>> MountHandler::Create(mounts::MountTable table,
                                                                   const ServiceOptions& options) {
  auto opened = OpenMountFileSystems(table, options.sync);
  if (!opened.ok()) return opened.status();
  return std::unique_ptr<MountHandler>(
      new MountHandler(std::move(table), std::move(opened).value(), options));
}

MountHandler::MountHandler(mounts::MountTable table, std::vector<std::unique_ptr<MountFs>> mounts,
                           const ServiceOptions& options)
    : mount_table_(std::move(table)),
      resolver_(mount_table_),
      mounts_(std::move(mounts)),
      txns_(options.flush_user_commits, options.lock_timeout),
      external_(options.external) {
  // The file systems were opened on the table before it moved: point them at its new home.
  for (size_t i = 0; i < mounts_.size(); ++i) mounts_[i]->mount = &mount_table_.mounts()[i];
  for (auto& m : mounts_) {
    MountFs* fs = m.get();
    fs->after_abort = [this, fs] { shared_maps_.RefreshAll(*fs); };
  }
}

void MountHandler::SetExitSink(std::function<void(pid_t, int)> sink) {
  host_.SetExitSink(sink);
  CallHandler::SetExitSink(std::move(sink));
}

void MountHandler::SetProcessTable(ProcessTable* table) {
  host_.SetProcessTable(table);
  CallHandler::SetProcessTable(table);
}

void MountHandler::SetListener(ptrace_ext::NotifyListener* listener) {
  host_.SetListener(listener);
  CallHandler::SetListener(listener);
}

std::vector<long> MountHandler::ExtraTrapped() const {
  std::vector<long> nrs = host_.ExtraTrapped();
  for (long i = 0; i < AMINO_SYS_COUNT; ++i) nrs.push_back(AMINO_SYS_BASE + i);
  if (external_) {
    for (long nr : OutputCalls()) nrs.push_back(nr);
  }
  return nrs;
}

std::vector<std::string> MountHandler::CoveredPoints() const {
  std::vector<std::string> points;
  for (const mounts::Mount& m : mount_table_.mounts()) points.push_back(m.host_point);
  return points;
}

bool MountHandler::NeedsStop(long nr) const {
  switch (nr) {
    case SYS_execve:
    case SYS_execveat:
    case SYS_chdir:
    case SYS_fchdir:
      return true;
    default:
      // Signals are sent by the command's first process before the monitor takes the
      // notification listener: they stop for the tracer instead (they are rare).
      if (external_) {
        for (long out : OutputCalls()) {
          if (out == nr) return true;
        }
      }
      return host_.NeedsStop(nr);
  }
}

schema::Cred MountHandler::CredOf(Thread& t, bool real) {
  const host::Creds* c = creds_.Get(t.tid);
  if (!c) return schema::Cred::Root();
  // access() checks the real ids with the capabilities a root real uid is given, or none
  // (access_override_creds()).
  return real ? schema::Cred::User(c->ruid, c->rgid, c->groups, c->ruid == 0 ? c->cap_permitted : 0)
              : schema::Cred::User(c->fsuid, c->fsgid, c->groups, c->cap_effective);
}

mode_t MountHandler::UmaskOf(Thread& t) {
  const host::Creds* c = creds_.Get(t.tid);
  return c ? c->umask : 022;
}

std::shared_ptr<ServedFile> MountHandler::ServedOf(Thread& t, int fd) {
  auto& files = t.proc->fds->files;
  auto it = files.find(fd);
  if (it == files.end()) return nullptr;
  return std::dynamic_pointer_cast<ServedFile>(it->second);
}

int MountHandler::MountIndex(const MountFs* m) const {
  for (size_t i = 0; i < mounts_.size(); ++i) {
    if (mounts_[i].get() == m) return static_cast<int>(i);
  }
  return -1;
}

Decision MountHandler::Serve(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  // Calls on host shadows (made by host_ for notified substitutes) stay with it, as does its
  // re-run of an mmap on a real descriptor.
  const int a0 = static_cast<int>(call.arg(0));
  if (!t.proc->fds->files.empty()) {
    const SyscallInfo* info = FindSyscall(nr);
    if (info && info->args[0] == Arg::kFd && host::ShadowOf(t, a0) && nr != SYS_close &&
        nr != SYS_dup && nr != SYS_dup2 && nr != SYS_dup3 && nr != SYS_close_range) {
      return host_.OnEntry(t, call);
    }
  }
  if (host::ChangesCredentials(nr)) {
    creds_.Invalidate(t.tid);
    return host_.OnEntry(t, call);
  }
  switch (nr) {
    case SYS_open:
      return Open(t, call, AT_FDCWD, call.arg(0), static_cast<int>(call.arg(1)),
                  static_cast<mode_t>(call.arg(2)), 0);
    case SYS_creat:
      return Open(t, call, AT_FDCWD, call.arg(0), O_CREAT | O_WRONLY | O_TRUNC,
                  static_cast<mode_t>(call.arg(1)), 0);
    case SYS_openat:
      return Open(t, call, a0, call.arg(1), static_cast<int>(call.arg(2)),
                  static_cast<mode_t>(call.arg(3)), 1);
    case SYS_openat2: {
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
        if (int err = Resolve(t, a0, path, false, &target)) {
          // The kernel reports its own errors, but it would be given a placeholder for a
          // served directory, and knows nothing of a virtual cwd.
          const bool served_base = a0 == AT_FDCWD ? t.proc->fs->cwd_mount >= 0 : !!ServedOf(t, a0);
          return served_base ? Decision::Emulate(err) : Decision::Pass();
        }
        if (target.kind == Target::Kind::kHost) return Decision::Pass();
        if (target.kind == Target::Kind::kServed) {
          if (int err = CheckResolveRules(t, a0, path, how.resolve, target))
            return Decision::Emulate(err);
        }
      }
      return Open(t, call, a0, call.arg(1), static_cast<int>(how.flags),
                  static_cast<mode_t>(how.mode), 1);
    }
    case SYS_close:
    case SYS_close_range:
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
    case SYS_sendmsg:
    case SYS_recvmsg:
      return Descriptors(t, call);
    case SYS_fcntl:
      if (auto f = ServedOf(t, a0)) return Fcntl(t, call, *f);
      return Descriptors(t, call);
    case SYS_mmap:
      if (!t.proc->region && !call.notified) {
        // Made early (every dynamically linked program maps files at start): a notified call
        // that needs a substitute path later can only use a region that already exists.
        Decision restart;
        if (!EnsureRegion(t, call, &restart)) return restart;
      }
      if (!(call.arg(3) & MAP_ANONYMOUS)) {
        if (auto f = ServedOf(t, static_cast<int>(call.arg(4)))) return Mmap(t, call, *f);
        if (host::ShadowOf(t, static_cast<int>(call.arg(4)))) return host_.OnEntry(t, call);
      }
      return Decision::Pass();
    case SYS_fstat:
    case SYS_newfstatat:
    case SYS_statx:
      if (!t.proc->fds->files.empty()) {
        if (std::optional<Decision> d = NodeStat(t, call)) return *d;
      }
      break;
    case SYS_chdir:
      return Chdir(t, call);
    case SYS_fchdir:
      return Fchdir(t, call);
    case SYS_getcwd:
      return Getcwd(t, call);
    case SYS_execve:
    case SYS_execveat:
      return Exec(t, call);
    case SYS_chroot:
    case SYS_sync:
    case SYS_msync:
    case SYS_name_to_handle_at:
    case SYS_open_by_handle_at:
      // sync flushes the host; Amino commits are already in the log the OS has. Stores through
      // shared mappings of served files reach the schema at msync (and durably with MS_SYNC).
      if (nr == SYS_sync) {
        (void)shared_maps_.WriteBackAll();
        for (auto& m : mounts_) (void)m->fs->FlushLog();
      }
      if (nr == SYS_msync && !shared_maps_.empty()) {
        for (MountFs* m : shared_maps_.WriteBackMapped(t.proc->tgid, call.arg(0), call.arg(1))) {
          if (call.arg(2) & MS_SYNC) (void)m->fs->FlushLog();
        }
      }
      return Decision::Pass();
    default:
      break;
  }
  const SyscallInfo* info = FindSyscall(nr);
  if (!info || !info->file) return Decision::Pass();
  if (info->args[0] == Arg::kFd) {
    if (auto f = ServedOf(t, a0)) return ServeFd(t, call, *f);
    // Calls with a second descriptor may name a served file there.
    if (nr == SYS_sendfile || nr == SYS_copy_file_range || nr == SYS_splice) {
      int other = static_cast<int>(nr == SYS_sendfile ? call.arg(1) : call.arg(2));
      if (auto f = ServedOf(t, other)) return ServeFd(t, call, *f);
    }
    return Decision::Pass();  // a host descriptor (*at calls have a kDirFd, not a kFd)
  }
  return PathCall(t, call);
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
  if (int err = Resolve(t, dirfd, path, false, &target)) return Decision::Emulate(err);
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
  file->opened_name = t.proc->fs->cwd_last;
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
    if (auto names = m.fs->Names(txn, r->id); names.ok() && !names->empty()) {
      file->opened_name = names->front();
    }
    file->type = r->stat.attr.mode & S_IFMT;
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

// The placeholder reopened with the access mode and status flags of the open it stands for, so
// that /proc/PID/fdinfo (lsof, a shell's own checks) shows them. Directories and O_PATH keep
// the plain placeholder (a memfd is neither).
// The flags the placeholder of `file` is reopened with; -1 when the plain one (O_RDWR) shows.
int ShownFlags(const ServedFile& file) {
  constexpr int kShown = O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC | O_SYNC | O_NOATIME;
  if (!S_ISREG(file.type) || (file.flags & O_PATH) || (file.flags & kShown) == O_RDWR) return -1;
  return file.flags & kShown;
}

void WithOpenFlags(host::ScopedFd& placeholder, const ServedFile& file) {
  const int shown = ShownFlags(file);
  if (shown < 0) return;
  const std::string self = "/proc/self/fd/" + std::to_string(placeholder.get());
  const int reopened = open(self.c_str(), shown | O_CLOEXEC);
  if (reopened >= 0) placeholder.reset(reopened);
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
    host::ScopedFd placeholder(memfd_create("amino", MFD_CLOEXEC));
    if (placeholder.get() >= 0) WithOpenFlags(placeholder, *file);
    struct stat st;
    if (placeholder.get() < 0 || fstat(placeholder.get(), &st) != 0)
      return Decision::Emulate(-errno);
    file->placeholder_ino = st.st_ino;
    long fd = listener_->ReplyWithFd(call.notification_id, placeholder.get(), want_cloexec);
    if (fd == -ENOENT) return Decision::Replied();
    if (fd < 0) return Decision::Emulate(fd);
    by_ino_[file->placeholder_ino] = file;
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

Decision MountHandler::Descriptors(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  auto& files = t.proc->fds->files;
  const int a0 = static_cast<int>(call.arg(0));
  switch (nr) {
    case SYS_close: {
      auto it = files.find(a0);
      if (it == files.end()) return Decision::Pass();
      if (auto f = std::dynamic_pointer_cast<ServedFile>(it->second)) {
        ReleaseProcessLocks(t.proc->tgid, f.get());
        // Stores through its shared mappings reach the schema at close (a conflict leaves
        // them for the next occasion).
        if (!shared_maps_.empty()) (void)shared_maps_.WriteBack(*f->mfs, f->id);
      }
      if (host::ShadowOf(t, a0)) return host_.OnEntry(t, call);
      files.erase(it);  // close releases the number even when it fails
      return Decision::Pass();
    }
    case SYS_close_range: {
      if (files.empty()) return Decision::Pass();
      Pending p;
      p.kind = Pending::Kind::kCloseRange;
      p.original = call;
      pending_[t.tid] = std::move(p);
      return Decision::ObserveExit();
    }
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
    case SYS_fcntl: {
      if (nr == SYS_fcntl) {
        const int cmd = static_cast<int>(call.arg(1));
        if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return host_.OnEntry(t, call);
      } else if (call.notified && listener_) {
        return DupAtNotification(t, call, *listener_, [&](OpenFile& f) {
          if (auto* s = dynamic_cast<ServedFile*>(&f)) ReleaseProcessLocks(t.proc->tgid, s);
        });
      }
      auto it = files.find(a0);
      std::shared_ptr<OpenFile> f = it == files.end() ? nullptr : it->second;
      const bool replaces =
          (nr == SYS_dup2 || nr == SYS_dup3) && files.count(static_cast<int>(call.arg(1)));
      if (!f && !replaces) return Decision::Pass();
      if (replaces) {
        if (auto old = ServedOf(t, static_cast<int>(call.arg(1))))
          ReleaseProcessLocks(t.proc->tgid, old.get());
      }
      Pending p;
      p.kind = Pending::Kind::kDup;
      p.original = call;
      p.file = std::move(f);
      p.old_fd = a0;
      pending_[t.tid] = std::move(p);
      return Decision::ObserveExit();
    }
    case SYS_sendmsg:
      for (int fd : PassedFds(*t.proc, call.arg(1))) {
        if (auto f = ServedOf(t, fd)) in_flight_.emplace(f->placeholder_ino, f);
      }
      return host_.OnEntry(t, call);
    case SYS_recvmsg: {
      Pending p;
      p.kind = Pending::Kind::kRecvMsg;
      p.original = call;
      pending_[t.tid] = std::move(p);
      return Decision::ObserveExit();
    }
    default:
      return Decision::Pass();
  }
}

Decision MountHandler::Fcntl(Thread& t, SyscallRegs& call, ServedFile& f) {
  const int cmd = static_cast<int>(call.arg(1));
  // check_fcntl_cmd(): what an O_PATH descriptor allows; anything else, unknown commands
  // included, is EBADF.
  if ((f.flags & O_PATH) && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC && cmd != F_GETFD &&
      cmd != F_SETFD && cmd != F_GETFL) {
    return Decision::Emulate(-EBADF);
  }
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
      return Descriptors(t, call);
    case F_GETFD:
    case F_SETFD:
      return Decision::Pass();  // the descriptor flag lives on the placeholder
    case F_GETFL: {
      // The kernel sets O_LARGEFILE on every 64-bit open (glibc's O_LARGEFILE is 0 here).
      constexpr int kKernelLargeFile = 0100000;
      return Decision::Emulate(f.flags | (f.flags & O_PATH ? 0 : kKernelLargeFile));
    }
    case F_SETFL: {
      // The flags Linux lets F_SETFL change; O_DIRECT is accepted and has no effect here.
      constexpr int kSettable = O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME | O_NONBLOCK;
      if (f.flags & O_PATH) return Decision::Emulate(-EBADF);
      const int want = static_cast<int>(call.arg(2));
      if ((want & O_NOATIME) && !(f.flags & O_NOATIME)) {
        // Only the owner (or a privileged caller) may set O_NOATIME.
        const schema::Cred cred = CredOf(t);
        uid_t owner = 0;
        Decision d = RunOnFile(
            f,
            [&](schema::Transaction& txn) {
              auto st = f.mfs->fs->FStat(txn, f.id);
              if (!st.ok()) return st.status();
              owner = st->attr.uid;
              return schema::Status::Ok();
            },
            [] { return 0L; });
        if (d.kind != Decision::Kind::kEmulate || d.result != 0) return d;
        if (!cred.owns(owner)) return Decision::Emulate(-EPERM);
      }
      f.flags = (f.flags & ~kSettable) | (want & kSettable);
      return Decision::Emulate(0);
    }
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
      return ServeFd(t, call, f);
    case F_GETOWN:
    case F_SETOWN:
    case F_GETSIG:
    case F_SETSIG:
    case F_GETOWN_EX:
    case F_SETOWN_EX:
      return Decision::Pass();  // signal-driven I/O on the placeholder: never signalled
    case F_GETLEASE:
      return Decision::Emulate(F_UNLCK);
    case F_SETLEASE:
    case F_NOTIFY:
      return Decision::Emulate(-EINVAL);
    case F_ADD_SEALS:
    case F_GET_SEALS:
      return Decision::Emulate(-EINVAL);
    case F_GETPIPE_SZ:
    case F_SETPIPE_SZ:
      return Decision::Emulate(-EBADF);
    default:
      return Decision::Emulate(-EINVAL);
  }
}

void MountHandler::OnExit(Thread& t, SyscallRegs& call) {
  auto it = pending_.find(t.tid);
  if (it == pending_.end()) {
    host_.OnExit(t, call);
    return;
  }
  Pending p = std::move(it->second);
  pending_.erase(it);
  const long r = call.result();
  auto& files = t.proc->fds->files;
  switch (p.kind) {
    case Pending::Kind::kPlaceholder:
      if (r >= 0) {
        auto f = std::static_pointer_cast<ServedFile>(p.file);
        ShowOpenFlags(t, call, *f, static_cast<int>(r));
        f->placeholder_ino = InodeOfFd(t.tid, static_cast<int>(r));
        by_ino_[f->placeholder_ino] = f;
        files[static_cast<int>(r)] = std::move(f);
      }
      break;
    case Pending::Kind::kDup:
      if (r >= 0 && r != p.old_fd) {
        if (p.file) {
          files[static_cast<int>(r)] = p.file;
        } else {
          files.erase(static_cast<int>(r));
        }
      }
      break;
    case Pending::Kind::kCloseRange:
      if (r == 0) {
        ApplyCloseRange(t, p.original, [&](OpenFile& f) {
          if (auto* s = dynamic_cast<ServedFile*>(&f)) ReleaseProcessLocks(t.proc->tgid, s);
        });
      }
      return;
    case Pending::Kind::kRecvMsg:
      if (r >= 0) {
        for (int fd : PassedFds(*t.proc, p.original.arg(1))) {
          const ino_t ino = InodeOfFd(t.tid, fd);
          if (!ino) continue;
          std::shared_ptr<ServedFile> f;
          if (auto sent = in_flight_.find(ino); sent != in_flight_.end()) {
            f = sent->second;
            in_flight_.erase(sent);
          } else if (auto known = by_ino_.find(ino); known != by_ino_.end()) {
            f = known->second.lock();
          }
          if (f && f->placeholder_ino == ino) files[fd] = f;
        }
      }
      host_.OnExit(t, call);  // host shadows passed in the same message
      return;
    case Pending::Kind::kChdir:
    case Pending::Kind::kVirtualChdir:
      if (r == 0) {
        auto& fs = *t.proc->fs;
        fs.host_cwd.clear();  // read again on next use
        if (p.kind == Pending::Kind::kVirtualChdir) {
          fs.cwd_mount = p.mount_index;
          fs.cwd_id = p.dir_id;
          fs.cwd = p.dir_path;
          fs.cwd_last = p.dir_last;
          fs.cwd_hold = p.file;
          fs.cwd_generation = mounts_[static_cast<size_t>(p.mount_index)]->dir_generation;
        } else {
          fs.cwd_mount = -1;
          fs.cwd.clear();
          fs.cwd_hold.reset();
        }
      }
      break;
    case Pending::Kind::kExec:
      if (!p.temp_path.empty()) RemoveProgramCopy(p.temp_path);
      if (r == 0) return;  // a new image: its registers are the new program's
      if (p.old_fd >= 0) {
        // A failed exec of a set-id copy by descriptor: the tracee keeps no descriptor of it.
        RemoteSyscalls rs(t, call, true, exit_sink_, listener_);
        rs.Call(SYS_close, static_cast<uint64_t>(p.old_fd));
        rs.Restore();
      }
      break;
    case Pending::Kind::kRestore:
      if (auto node = std::dynamic_pointer_cast<NodeFile>(p.file); node && r >= 0) {
        node->host_ino = InodeOfFd(t.tid, static_cast<int>(r));
        t.proc->fds->files[static_cast<int>(r)] = std::move(node);
      }
      break;
    case Pending::Kind::kNone:
      break;
  }
  // Put back the argument registers the rewritten call used; the result stays.
  SyscallRegs out = p.original;
  out.regs.rax = call.regs.rax;
  out.regs.rip = call.regs.rip;
  out.regs.rcx = call.regs.rcx;
  out.regs.r11 = call.regs.r11;
  call = out;
}

void MountHandler::OnTaskExit(Thread& t) {
  host_.OnTaskExit(t);
  exec_fds_.erase(t.tid);
  if (auto it = pending_.find(t.tid); it != pending_.end()) {
    // A thread killed in an exec leaves no copy of the program behind.
    if (!it->second.temp_path.empty()) RemoveProgramCopy(it->second.temp_path);
    pending_.erase(it);
  }
  fifo_waits_.erase(t.tid);
  if (t.tid == t.proc->tgid) ReleaseProcessLocks(t.tid, nullptr);
  txns_.OnTaskExit(t.tid);  // detaches: a transaction no one holds any more is aborted
  CloseDeferred();
  // A process's mappings end with it: what it stored reaches the schema.
  if (t.tid == t.proc->tgid && !shared_maps_.empty()) (void)shared_maps_.WriteBackAll();
}

void MountHandler::OnExec(Thread& t) {
  creds_.Invalidate(t.tid);
  // An exec by a thread other than the leader continues under the leader's tid: its pending
  // exit (a materialised program to remove) moves with it.
  if (!pending_.count(t.tid)) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->second.kind == Pending::Kind::kExec && table_ && !table_->Find(it->first)) {
        Pending p = std::move(it->second);
        pending_.erase(it);
        pending_[t.tid] = std::move(p);
        break;
      }
    }
  }
  host_.OnExec(t);
  // Close-on-exec placeholders are gone: keep the files whose placeholder is still there.
  auto& files = t.proc->fds->files;
  for (auto it = files.begin(); it != files.end();) {
    auto f = std::dynamic_pointer_cast<ServedFile>(it->second);
    if (auto node = std::dynamic_pointer_cast<NodeFile>(it->second)) {
      it = InodeOfFd(t.tid, it->first) == node->host_ino ? std::next(it) : files.erase(it);
      continue;
    }
    if (!f) {
      ++it;
      continue;
    }
    const bool alive = InodeOfFd(t.tid, it->first) == f->placeholder_ino;
    if (!alive) ReleaseProcessLocks(t.proc->tgid, f.get());
    it = alive ? std::next(it) : files.erase(it);
  }
}

}  // namespace amino::monitor::service
