// Opens under --emulate=host: the monitor opens the file as the tracee, and the tracee gets a
// placeholder (a shadow) for regular files and directories, the real descriptor otherwise.
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
#include "monitor/host/host_handler.h"
#include "monitor/remote_syscall.h"
#include "monitor/shadow_fds.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::host {

// open, creat, openat, openat2: the open_how the kernel builds (or is given), checked as the
// kernel checks it before the path is looked at.
Decision HostHandler::OpenCall(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
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
    default:
      return Decision::Pass();
  }
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
      if (call.notified) return OpenSpecialNotified(call, dfd, path, flags, st, c);
      std::string base = PathOfFd(dir->fd);
      if (base.empty()) return Decision::Emulate(-ENOENT);
      Decision restart;
      if (!EnsureRegion(t, call, &restart)) return restart;
      uint64_t addr = t.proc->region->Put(t.tid, 0, base + "/" + path + '\0');
      if (!addr) return Decision::Emulate(-ENAMETOOLONG);
      Pending p;
      p.kind = Pending::Kind::kRestore;
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

Decision HostHandler::OpenInstead(SyscallRegs& call, const std::string& host_path,
                                  const open_how& how, const Creds& c) {
  return OpenAt(call, AT_FDCWD, host_path, how, c);
}

Decision HostHandler::OpenInstead(Thread& t, SyscallRegs& call, int dirfd, const std::string& path,
                                  const open_how& how, const Creds& c) {
  ScopedFd holder;
  const int dfd = ResolveDirFd(t, dirfd, path, holder);
  if (dfd < 0 && dfd != AT_FDCWD) return Decision::Emulate(dfd);
  return OpenAt(call, dfd, path, how, c);
}

Decision HostHandler::OpenAt(SyscallRegs& call, int dfd, const std::string& path,
                             const open_how& how, const Creds& c) {
  ClearOwnUmask();
  const int flags = static_cast<int>(how.flags);
  {
    AsTracee as(c);
    struct stat st;
    if (fstatat(dfd, path.c_str(), &st, (flags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
        S_ISFIFO(st.st_mode)) {
      return OpenSpecialNotified(call, dfd, path, flags, st, c);
    }
  }
  int fd;
  {
    AsTracee as(c);
    // Never the monitor's controlling terminal; close-on-exec is the tracee's to ask for.
    // (openat2 refuses any flag beside O_PATH's own, and an O_PATH open opens no terminal.)
    open_how host = how;
    if (!(host.flags & O_PATH)) host.flags |= O_NOCTTY;
    host.flags &= ~static_cast<uint64_t>(O_CLOEXEC);
    host.mode &= ~static_cast<uint64_t>(c.umask);
    fd = static_cast<int>(syscall(SYS_openat2, dfd, path.c_str(), &host, sizeof host));
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
  descriptors_.Known(file);
  return Decision::Replied();
}

Decision HostHandler::OpenSpecialNotified(SyscallRegs& call, int dfd, const std::string& path,
                                          int flags, const struct stat& st, const Creds& c) {
  // The kernel cannot be given another path for a notified call, so the monitor opens the node
  // for the tracee and hands it the real descriptor. A FIFO is opened without waiting (the
  // monitor must not block): a writer with no reader yet waits parked; a reader is not held
  // back until a writer comes, which is the one difference from the kernel.
  const bool fifo = S_ISFIFO(st.st_mode);
  int fd;
  {
    AsTracee as(c);
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

}  // namespace amino::monitor::host
