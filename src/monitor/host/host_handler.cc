// --emulate=host: dispatch of trapped calls (opens to host_open.cc, descriptors to
// host_descriptors.cc, data to host_data.cc, paths to host_paths.cc); mmap, fchdir, and what
// exits, task exits and execs change.
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
    case SYS_openat:
    case SYS_openat2:
      return OpenCall(t, call);
    case SYS_close:
      return Close(t, call);
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
