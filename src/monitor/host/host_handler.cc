// Descriptor life cycle under --emulate=host: open (shadow creation), dup, fcntl, close, mmap,
// fchdir, exec; dispatch of the other calls to host_data.cc and host_paths.cc.
#include "monitor/host/host_handler.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "monitor/calls/validate.h"
#include "monitor/remote_syscall.h"
#include "monitor/shadow_fds.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::host {

namespace {

std::string ProcFd(pid_t pid, int fd) {
  return "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
}

// The current path of a descriptor the monitor holds; empty if the file has no name any more.
std::string PathOfFd(int fd) {
  char buf[4096];
  ssize_t n = readlink(ProcFd(getpid(), fd).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string p(buf, static_cast<size_t>(n));
  if (p.size() > 10 && p.compare(p.size() - 10, 10, " (deleted)") == 0) return {};
  return p;
}

}  // namespace

const Creds& HostHandler::CredsOf(Thread& t) {
  static const Creds kRoot;
  const Creds* c = creds_.Get(t.tid);
  return c ? *c : kRoot;
}

std::vector<long> HostHandler::ExtraTrapped() const {
  // Credential and umask changes invalidate what the monitor caches of a thread.
  return {SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid, SYS_setresgid,
          SYS_setfsuid, SYS_setfsgid, SYS_setgroups, SYS_capset, SYS_umask,
          // Shadows travel between processes in SCM_RIGHTS messages.
          SYS_sendmsg, SYS_recvmsg};
}

bool HostHandler::NeedsStop(long nr) const {
  switch (nr) {
    // The descriptor's new number is seen at the call's exit (dup, dup2 and dup3 are answered
    // at their notification instead: DupAtNotification).
    case SYS_fcntl:
    case SYS_close_range:
    case SYS_recvmsg:
    case SYS_sendmsg:
    // The kernel is given the real file for the time of the call.
    case SYS_mmap:
    case SYS_fchdir:
      return true;
    default:
      return false;
  }
}

long HostHandler::OnForeignCall(Thread& t, const ForeignCall& c) {
  if (ChangesCredentials(c.native_nr)) {
    creds_.Invalidate(t.tid);
    return 0;
  }
  if (c.native_nr == SYS_close_range) {
    return HoldsAnyIn(*t.proc->fds, c.args[0], c.args[1]) ? kRefusedForeign : 0;
  }
  // Paths are the host's, which the kernel serves as well; a shadow descriptor is only a
  // placeholder to the kernel.
  const SyscallInfo* info = c.native_nr < 0 ? nullptr : FindSyscall(c.native_nr);
  if (!info || !info->file) return 0;
  for (int i = 0; i < 6; ++i) {
    if ((info->args[i] == Arg::kFd || info->args[i] == Arg::kDirFd) &&
        ShadowOf(t, static_cast<int>(c.args[i]))) {
      return kRefusedForeign;
    }
  }
  return 0;
}

Decision HostHandler::OnEntry(Thread& t, SyscallRegs& call) {
  if (!umask_cleared_) {
    // The tracee's umask is applied to each emulated creation; the monitor's must not add to
    // it. (Cleared only now: the command was forked with the caller's umask.)
    umask(0);
    umask_cleared_ = true;
  }
  const long nr = call.nr();
  auto pending = pending_.find(t.tid);
  if (pending != pending_.end() && pending->second.kind == Pending::Kind::kMmapClose &&
      nr == SYS_mmap) {
    return Decision::ObserveExit();  // the mmap re-run on the real descriptor
  }
  if (ChangesCredentials(nr)) {
    creds_.Invalidate(t.tid);
    return Decision::Pass();
  }
  const int a0 = static_cast<int>(call.arg(0));
  switch (nr) {
    case SYS_open:
    case SYS_creat:
    case SYS_openat: {
      // The open_how the kernel builds, and its checks, before the path is looked at.
      const open_how how = nr == SYS_open ? calls::OpenHowOf(call.arg(1), call.arg(2))
                           : nr == SYS_creat
                               ? calls::OpenHowOf(O_CREAT | O_WRONLY | O_TRUNC, call.arg(1))
                               : calls::OpenHowOf(call.arg(2), call.arg(3));
      if (int err = calls::ValidateOpenHow(how)) return Decision::Emulate(-err);
      return nr == SYS_openat ? Open(t, call, a0, call.arg(1), how)
                              : Open(t, call, AT_FDCWD, call.arg(0), how);
    }
    case SYS_openat2: {
      // As the kernel: the size, then bytes beyond the struct this monitor knows (all zero),
      // then the struct itself, checked before the path.
      const uint64_t size = call.arg(3);
      if (int err = calls::ValidateOpenHowSize(size)) return Decision::Emulate(-err);
      open_how how{};
      if (size > sizeof how) {
        std::vector<unsigned char> tail(size - sizeof how);
        if (ReadMemory(*t.proc, call.arg(2) + sizeof how, tail.data(), tail.size()) != 0)
          return Decision::Emulate(-EFAULT);
        if (int err = calls::ValidateOpenHowTail(tail)) return Decision::Emulate(-err);
      }
      if (ReadMemory(*t.proc, call.arg(2), &how, std::min<uint64_t>(size, sizeof how)) != 0)
        return Decision::Emulate(-EFAULT);
      if (int err = calls::ValidateOpenHow(how)) return Decision::Emulate(-err);
      return Open(t, call, a0, call.arg(1), how);
    }
    case SYS_close:
      if (std::shared_ptr<HostFile> f = ShadowOf(t, a0)) {
        struct stat st;
        if (fstat(f->fd, &st) == 0) {
          FileKey key{st.st_dev, st.st_ino};
          ReleasePosixLocks(t.proc->tgid, &key);
        }
      }
      t.proc->fds->files.erase(a0);  // close releases the number even when it fails
      return Decision::Pass();
    case SYS_close_range:
    case SYS_dup:
    case SYS_dup2:
    case SYS_dup3:
      return Dup(t, call);
    case SYS_fcntl:
      return Fcntl(t, call);
    case SYS_sendmsg:
      for (int fd : PassedFds(*t.proc, call.arg(1))) {
        if (std::shared_ptr<HostFile> f = ShadowOf(t, fd))
          in_flight_.emplace(f->placeholder_ino, f);
      }
      return Decision::Pass();
    case SYS_recvmsg: {
      Pending p;
      p.kind = Pending::Kind::kRecvMsg;
      p.original = call;
      pending_[t.tid] = std::move(p);
      return Decision::ObserveExit();
    }
    case SYS_mmap:
      return Mmap(t, call);
    case SYS_fchdir:
      return Fchdir(t, call);
    case SYS_execve:
    case SYS_execveat:
    case SYS_chdir:
    case SYS_getcwd:
    case SYS_chroot:
    case SYS_msync:
    case SYS_sync:
    case SYS_name_to_handle_at:
    case SYS_open_by_handle_at:
      return Decision::Pass();
    default:
      break;
  }
  const SyscallInfo* info = FindSyscall(nr);
  if (!info || !info->file) return Decision::Pass();
  if (info->args[0] == Arg::kFd) {
    std::shared_ptr<HostFile> f = ShadowOf(t, a0);
    // Calls with a second descriptor (copy_file_range, splice, sendfile) may name a shadow there.
    if (!f && (nr == SYS_sendfile || nr == SYS_copy_file_range || nr == SYS_splice)) {
      int other = static_cast<int>(nr == SYS_sendfile ? call.arg(1) : call.arg(2));
      if (ShadowOf(t, other)) return DataCall(t, call, *ShadowOf(t, other));
    }
    if (!f) return Decision::Pass();
    return DataCall(t, call, *f);
  }
  return PathCall(t, call);
}

Decision HostHandler::Open(Thread& t, SyscallRegs& call, int dirfd, uint64_t path_addr,
                           const open_how& how) {
  const int flags = static_cast<int>(how.flags);
  std::string path;
  bool via_shadow;
  if (int err = ReadPath(t, path_addr, &path, &via_shadow, table_)) return Decision::Emulate(-err);
  if (path.empty()) return Decision::Emulate(-ENOENT);
  if (!via_shadow && IsKernelPath(path)) return Decision::Pass();
  ScopedFd holder;
  // RESOLVE_IN_ROOT resolves even an absolute path inside the directory.
  int dfd = ResolveDirFd(t, dirfd, path, holder, (how.resolve & RESOLVE_IN_ROOT) != 0);
  if (dfd < 0 && dfd != AT_FDCWD) return Decision::Emulate(dfd);
  const Creds& c = CredsOf(t);
  {
    AsTracee as(c);
    struct stat st;
    const int nofollow = (flags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0;
    if (fstatat(dfd, path.c_str(), &st, nofollow) == 0 && !S_ISREG(st.st_mode) &&
        !S_ISDIR(st.st_mode) && !(nofollow && S_ISLNK(st.st_mode))) {
      // FIFOs, devices, sockets: the kernel's. Relative to a shadow directory, the kernel
      // gets the directory's path through the region instead of the placeholder.
      std::shared_ptr<HostFile> dir =
          dirfd == AT_FDCWD || path[0] == '/' ? nullptr : ShadowOf(t, dirfd);
      if (!dir) return Decision::Pass();
      if (call.notified) return OpenSpecialNotified(t, call, dfd, path, flags, st);
      std::string base = PathOfFd(dir->fd);
      if (base.empty()) return Decision::Emulate(-ENOENT);
      Decision restart;
      if (!EnsureRegion(t, call, &restart)) return restart;
      uint64_t addr = t.proc->region->Put(t.tid, 0, base + "/" + path + '\0');
      if (!addr) return Decision::Emulate(-ENAMETOOLONG);
      Pending p;
      p.kind = Pending::Kind::kDup;  // only the registers to put back
      p.original = call;
      pending_[t.tid] = std::move(p);
      call.regs.rdi = static_cast<uint64_t>(AT_FDCWD);
      call.regs.rsi = addr;
      return Decision::ObserveExit();
    }
  }
  Decision restart;
  if (!call.notified && !EnsureRegion(t, call, &restart)) return restart;
  int hfd;
  {
    AsTracee as(c);
    // Without O_CLOEXEC: the monitor never executes anything, and /proc/PID/fdinfo of the
    // shadow then shows the tracee's own flags. openat2 for every form: it applies the
    // RESOLVE_* rules, and the open_how is already the one the kernel would use.
    open_how host = how;
    host.flags &= ~static_cast<uint64_t>(O_CLOEXEC);
    host.mode &= ~static_cast<uint64_t>(c.umask);
    hfd = static_cast<int>(syscall(SYS_openat2, dfd, path.c_str(), &host, sizeof host));
    if (hfd < 0) return Decision::Emulate(-errno);
  }
  if (call.notified) return OpenNotified(t, call, hfd, flags);
  auto file = std::make_shared<HostFile>();
  file->fd = hfd;
  file->opener = c;
  Pending p;
  p.kind = Pending::Kind::kOpen;
  p.original = call;
  p.file = std::move(file);
  uint64_t name = t.proc->region->Put(t.tid, 0, std::string_view("amino", 6));
  if (!name) return Decision::Emulate(-EMFILE);
  call.regs.orig_rax = SYS_memfd_create;
  call.regs.rdi = name;
  call.regs.rsi = (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0;
  pending_[t.tid] = std::move(p);
  return Decision::ObserveExit();
}

Decision HostHandler::OpenInstead(Thread& t, SyscallRegs& call, const std::string& host_path,
                                  const open_how& how) {
  const Creds& c = CredsOf(t);
  const int flags = static_cast<int>(how.flags);
  {
    AsTracee as(c);
    struct stat st;
    if (fstatat(AT_FDCWD, host_path.c_str(), &st, (flags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0) ==
            0 &&
        S_ISFIFO(st.st_mode)) {
      return OpenSpecialNotified(t, call, AT_FDCWD, host_path, flags, st);
    }
  }
  int fd;
  {
    AsTracee as(c);
    // Never the monitor's controlling terminal; close-on-exec is the tracee's to ask for.
    open_how host = how;
    host.flags = (host.flags | O_NOCTTY) & ~static_cast<uint64_t>(O_CLOEXEC);
    host.mode &= ~static_cast<uint64_t>(c.umask);
    fd = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, host_path.c_str(), &host, sizeof host));
    if (fd < 0) return Decision::Emulate(-errno);
  }
  ScopedFd owned(fd);
  long r = listener_->ReplyWithFd(call.notification_id, fd, flags & O_CLOEXEC);
  if (r == -ENOENT) return Decision::Replied();  // the caller is gone
  return r < 0 ? Decision::Emulate(r) : Decision::Replied();
}

Decision HostHandler::OpenNotified(Thread& t, SyscallRegs& call, int hfd, int flags) {
  auto file = std::make_shared<HostFile>();
  file->fd = hfd;
  file->opener = CredsOf(t);
  ScopedFd placeholder(memfd_create("amino", MFD_CLOEXEC));
  struct stat st;
  if (placeholder.get() < 0 || fstat(placeholder.get(), &st) != 0) return Decision::Emulate(-errno);
  file->placeholder_ino = st.st_ino;
  long fd = listener_->ReplyWithFd(call.notification_id, placeholder.get(), flags & O_CLOEXEC);
  if (fd == -ENOENT) return Decision::Replied();  // the caller is gone
  if (fd < 0) return Decision::Emulate(fd);       // no room in its table: EMFILE
  t.proc->fds->files[static_cast<int>(fd)] = file;
  by_ino_[file->placeholder_ino] = file;
  return Decision::Replied();
}

Decision HostHandler::OpenSpecialNotified(Thread& t, SyscallRegs& call, int dfd,
                                          const std::string& path, int flags,
                                          const struct stat& st) {
  // The kernel cannot be given another path for a notified call, so the monitor opens the node
  // for the tracee and hands it the real descriptor. A FIFO is opened without waiting (the
  // monitor must not block): a writer with no reader yet waits parked; a reader is not held
  // back until a writer comes, which is the one difference from the kernel.
  const bool fifo = S_ISFIFO(st.st_mode);
  int fd;
  {
    AsTracee as(CredsOf(t));
    fd = openat(dfd, path.c_str(), (flags | (fifo ? O_NONBLOCK : 0) | O_NOCTTY) & ~O_CLOEXEC);
  }
  if (fd < 0) {
    if (fifo && errno == ENXIO && !(flags & O_NONBLOCK)) return Decision::Park();
    return Decision::Emulate(-errno);
  }
  ScopedFd owned(fd);
  if (fifo && !(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  long r = listener_->ReplyWithFd(call.notification_id, fd, flags & O_CLOEXEC);
  if (r == -ENOENT) return Decision::Replied();
  return r < 0 ? Decision::Emulate(r) : Decision::Replied();
}

Decision HostHandler::Dup(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  if (nr == SYS_close_range) {
    Pending p;
    p.kind = Pending::Kind::kClose;
    p.original = call;
    pending_[t.tid] = std::move(p);
    return Decision::ObserveExit();
  }
  if (call.notified && listener_) return DupAtNotification(t, call, *listener_, [](OpenFile&) {});
  const int old_fd = static_cast<int>(call.arg(0));
  std::shared_ptr<HostFile> f = ShadowOf(t, old_fd);
  const bool replaces_shadow = nr != SYS_dup && ShadowOf(t, static_cast<int>(call.arg(1)));
  if (!f && !replaces_shadow) return Decision::Pass();
  Pending p;
  p.kind = Pending::Kind::kDup;
  p.original = call;
  p.file = std::move(f);
  p.old_fd = old_fd;
  pending_[t.tid] = std::move(p);
  return Decision::ObserveExit();
}

Decision HostHandler::Fcntl(Thread& t, SyscallRegs& call) {
  const int fd = static_cast<int>(call.arg(0));
  const int cmd = static_cast<int>(call.arg(1));
  std::shared_ptr<HostFile> f = ShadowOf(t, fd);
  if (!f) return Decision::Pass();
  // An O_PATH descriptor takes only these commands; any other is EBADF, before EINVAL for
  // an unknown one.
  if ((fcntl(f->fd, F_GETFL) & O_PATH) && cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC &&
      cmd != F_GETFD && cmd != F_SETFD && cmd != F_GETFL) {
    return Decision::Emulate(-EBADF);
  }
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: {
      Pending p;
      p.kind = Pending::Kind::kDup;
      p.original = call;
      p.file = f;
      p.old_fd = fd;
      pending_[t.tid] = std::move(p);
      return Decision::ObserveExit();
    }
    case F_GETFD:
    case F_SETFD:
      return Decision::Pass();  // the descriptor flag lives on the placeholder
    case F_GETLK:
    case F_SETLK:
    case F_SETLKW:
      return PosixLock(t, call, *f);
    case F_OFD_GETLK:
    case F_OFD_SETLK:
    case F_OFD_SETLKW: {
      struct flock fl;
      if (ReadMemory(*t.proc, call.arg(2), &fl, sizeof fl) != 0) return Decision::Emulate(-EFAULT);
      // Open-file-description locks: the monitor's descriptor is the description.
      int host_cmd = cmd == F_OFD_GETLK ? F_OFD_GETLK : F_OFD_SETLK;
      const bool wait = cmd == F_OFD_SETLKW;
      struct flock hl = fl;
      if (fcntl(f->fd, host_cmd, &hl) != 0) {
        int err = errno;
        if (wait && (err == EAGAIN || err == EACCES)) return Decision::Park();
        return Decision::Emulate(-err);
      }
      if (host_cmd == F_OFD_GETLK) {
        fl.l_type = hl.l_type;
        fl.l_whence = hl.l_whence;
        fl.l_start = hl.l_start;
        fl.l_len = hl.l_len;
        fl.l_pid = hl.l_type == F_UNLCK ? fl.l_pid : -1;
        if (WriteMemory(*t.proc, call.arg(2), &fl, sizeof fl) != 0)
          return Decision::Emulate(-EFAULT);
      }
      return Decision::Emulate(0);
    }
    case F_GETFL:
    case F_SETFL:
    case F_GETOWN:
    case F_SETOWN:
    case F_GETSIG:
    case F_SETSIG:
    case F_GETLEASE:
    case F_SETLEASE:
    case F_NOTIFY:
    case F_ADD_SEALS:
    case F_GET_SEALS: {
      long r = fcntl(f->fd, cmd, static_cast<unsigned long>(call.arg(2)));
      return Decision::Emulate(r < 0 ? -errno : r);
    }
    default:
      return Decision::Emulate(-EINVAL);
  }
}

Decision HostHandler::Mmap(Thread& t, SyscallRegs& call) {
  const uint64_t flags = call.arg(3);
  const int fd = static_cast<int>(call.arg(4));
  std::shared_ptr<HostFile> f = (flags & MAP_ANONYMOUS) ? nullptr : ShadowOf(t, fd);
  if (!f) return Decision::Pass();
  const int fl = fcntl(f->fd, F_GETFL);
  if (fl & O_PATH) return Decision::Emulate(-EBADF);  // no descriptor to mmap
  const int acc = fl & O_ACCMODE;
  // The kernel maps the real file: the tracee gets a real descriptor for the time of the call,
  // opened with the shadow's access mode and O_NOATIME (mapping updates the access time).
  std::string path = PathOfFd(f->fd);
  if (path.empty()) {
    // The file has no name any more: what the kernel checks on the descriptor before it maps,
    // then a refusal (mapping an unlinked shadow is not supported).
    const uint64_t prot = call.arg(2);
    const uint64_t type = flags & MAP_TYPE;
    if (call.arg(1) == 0) return Decision::Emulate(-EINVAL);
    // Access mode 3 allows neither reading nor writing.
    if ((type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && (prot & PROT_WRITE) &&
        acc != O_RDWR && acc != O_WRONLY) {
      return Decision::Emulate(-EACCES);
    }
    if (acc != O_RDONLY && acc != O_RDWR) return Decision::Emulate(-EACCES);
    return Decision::Emulate(-ENODEV);
  }
  Decision restart;
  if (!EnsureRegion(t, call, &restart)) return restart;
  uint64_t addr = t.proc->region->Put(t.tid, 0, path + '\0');
  if (!addr) return Decision::Emulate(-ENOMEM);
  RemoteSyscalls rs(t, call, false, exit_sink_, listener_);
  long real = rs.Call(SYS_openat, static_cast<uint64_t>(AT_FDCWD), addr,
                      static_cast<uint64_t>(acc | (fl & O_NOATIME) | O_CLOEXEC), 0);
  if (real == -EPERM && (fl & O_NOATIME)) {
    // O_NOATIME is the owner's: the tracee set it while it owned the file.
    real = rs.Call(SYS_openat, static_cast<uint64_t>(AT_FDCWD), addr,
                   static_cast<uint64_t>(acc | O_CLOEXEC), 0);
  }
  if (real < 0) {
    rs.ReturnFromCall(real == -ENOENT ? -ENODEV : real);
    return Decision::Restart();
  }
  SyscallRegs with = call;
  with.regs.r8 = static_cast<uint64_t>(real);
  rs.FinishWith(with);
  Pending p;
  p.kind = Pending::Kind::kMmapClose;
  p.temp_fd = static_cast<int>(real);
  pending_[t.tid] = std::move(p);
  return Decision::Restart();
}

Decision HostHandler::Fchdir(Thread& t, SyscallRegs& call) {
  std::shared_ptr<HostFile> f = ShadowOf(t, static_cast<int>(call.arg(0)));
  if (!f) return Decision::Pass();
  struct stat st;
  if (fstat(f->fd, &st) != 0) return Decision::Emulate(-errno);
  if (!S_ISDIR(st.st_mode)) return Decision::Emulate(-ENOTDIR);
  std::string path = PathOfFd(f->fd);
  if (path.empty()) return Decision::Emulate(-ENOENT);
  Decision restart;
  if (!EnsureRegion(t, call, &restart)) return restart;
  uint64_t addr = t.proc->region->Put(t.tid, 0, path + '\0');
  if (!addr) return Decision::Emulate(-ENOMEM);
  Pending p;
  p.kind = Pending::Kind::kDup;  // nothing to record; registers are put back at the exit
  p.original = call;
  p.old_fd = -1;
  pending_[t.tid] = std::move(p);
  call.regs.orig_rax = SYS_chdir;
  call.regs.rdi = addr;
  return Decision::ObserveExit();
}

void HostHandler::OnExit(Thread& t, SyscallRegs& call) {
  auto it = pending_.find(t.tid);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  const long r = call.result();
  auto& files = t.proc->fds->files;
  switch (p.kind) {
    case Pending::Kind::kOpen:
      if (r >= 0) {
        p.file->placeholder_ino = InodeOfFd(t.tid, static_cast<int>(r));
        files[static_cast<int>(r)] = p.file;
        by_ino_[p.file->placeholder_ino] = p.file;
      }
      break;
    case Pending::Kind::kRecvMsg:
      if (r >= 0) {
        for (int fd : PassedFds(*t.proc, p.original.arg(1))) {
          const ino_t ino = InodeOfFd(t.tid, fd);
          if (!ino) continue;
          std::shared_ptr<HostFile> f;
          if (auto sent = in_flight_.find(ino); sent != in_flight_.end()) {
            f = sent->second;
            in_flight_.erase(sent);
          } else if (auto known = by_ino_.find(ino); known != by_ino_.end()) {
            f = known->second.lock();
          }
          if (f && f->placeholder_ino == ino) files[fd] = f;
        }
      }
      return;
    case Pending::Kind::kDup:
      if (r >= 0 && p.old_fd >= 0) {
        if (p.file) {
          files[static_cast<int>(r)] = p.file;
        } else {
          files.erase(static_cast<int>(r));
        }
      }
      break;
    case Pending::Kind::kClose:
      if (r == 0) ApplyCloseRange(t, p.original, [](OpenFile&) {});
      break;
    case Pending::Kind::kMmapClose: {
      RemoteSyscalls rs(t, call, true, exit_sink_, listener_);
      rs.Call(SYS_close, static_cast<uint64_t>(p.temp_fd));
      rs.Restore();
      return;  // registers are the mmap's own
    }
    case Pending::Kind::kNone:
      return;
  }
  // Put back the argument registers the rewritten call used; the result stays.
  SyscallRegs out = p.original;
  out.regs.rax = call.regs.rax;
  out.regs.rip = call.regs.rip;
  out.regs.rcx = call.regs.rcx;
  out.regs.r11 = call.regs.r11;
  call = out;
}

Decision HostHandler::PosixLock(Thread& t, SyscallRegs& call, HostFile& f) {
  const int cmd = static_cast<int>(call.arg(1));
  struct flock fl;
  if (ReadMemory(*t.proc, call.arg(2), &fl, sizeof fl) != 0) return Decision::Emulate(-EFAULT);
  const int acc = fcntl(f.fd, F_GETFL) & O_ACCMODE;
  if (cmd != F_GETLK &&
      ((fl.l_type == F_RDLCK && acc == O_WRONLY) || (fl.l_type == F_WRLCK && acc == O_RDONLY))) {
    return Decision::Emulate(-EBADF);
  }
  struct stat st;
  if (fstat(f.fd, &st) != 0) return Decision::Emulate(-errno);
  FileKey key{st.st_dev, st.st_ino};
  auto& holders = lock_fds_[key];
  int& lock_fd = holders[t.proc->tgid];
  if (lock_fd <= 0) {
    const std::string self = "/proc/self/fd/" + std::to_string(f.fd);
    lock_fd = open(self.c_str(), O_RDWR | O_CLOEXEC);
    if (lock_fd < 0) lock_fd = open(self.c_str(), acc | O_CLOEXEC);
    if (lock_fd < 0) {
      int err = errno;
      holders.erase(t.proc->tgid);
      return Decision::Emulate(-err);
    }
  }
  // A relative start (SEEK_CUR) means the tracee's offset, which is the shadow's.
  struct flock hl = fl;
  if (hl.l_whence == SEEK_CUR) {
    hl.l_start += lseek(f.fd, 0, SEEK_CUR);
    hl.l_whence = SEEK_SET;
  }
  hl.l_pid = 0;
  if (cmd == F_GETLK) {
    if (fcntl(lock_fd, F_OFD_GETLK, &hl) != 0) return Decision::Emulate(-errno);
    if (hl.l_type != F_UNLCK && hl.l_pid == -1) {
      // Held by another traced process: the one whose own view shows no such conflict.
      for (auto& [pid, fd] : holders) {
        if (pid == t.proc->tgid) continue;
        struct flock probe = fl;
        probe.l_pid = 0;
        if (probe.l_whence == SEEK_CUR) probe.l_whence = SEEK_SET, probe.l_start = hl.l_start;
        if (fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type == F_UNLCK) {
          hl.l_pid = pid;
          break;
        }
      }
    }
    if (hl.l_type == F_UNLCK) {
      fl.l_type = F_UNLCK;
    } else {
      fl = hl;
    }
    if (WriteMemory(*t.proc, call.arg(2), &fl, sizeof fl) != 0) return Decision::Emulate(-EFAULT);
    return Decision::Emulate(0);
  }
  if (fcntl(lock_fd, F_OFD_SETLK, &hl) == 0) return Decision::Emulate(0);
  int err = errno;
  if (cmd == F_SETLKW && (err == EAGAIN || err == EACCES)) return Decision::Park();
  return Decision::Emulate(-err);
}

void HostHandler::ReleasePosixLocks(pid_t tgid, const FileKey* file) {
  for (auto it = lock_fds_.begin(); it != lock_fds_.end();) {
    if (!file || it->first == *file) {
      auto h = it->second.find(tgid);
      if (h != it->second.end()) {
        close(h->second);
        it->second.erase(h);
      }
    }
    it = it->second.empty() ? lock_fds_.erase(it) : std::next(it);
  }
}

void HostHandler::OnTaskExit(Thread& t) {
  if (t.proc->region) t.proc->region->Release(t.tid);
  if (t.tid == t.proc->tgid) ReleasePosixLocks(t.tid, nullptr);
}

void HostHandler::OnExec(Thread& t) {
  creds_.Invalidate(t.tid);
  // Close-on-exec placeholders are gone: keep the shadows whose placeholder is still there.
  // (Files of another kind belong to the handler this one works for.)
  auto& files = t.proc->fds->files;
  for (auto it = files.begin(); it != files.end();) {
    auto f = std::dynamic_pointer_cast<HostFile>(it->second);
    bool alive = !f || InodeOfFd(t.tid, it->first) == f->placeholder_ino;
    it = alive ? std::next(it) : files.erase(it);
  }
}

}  // namespace amino::monitor::host
