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
#include "monitor/pass_descriptor.h"
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
  std::vector<long> nrs = CredentialCalls();
  // Shadows travel between processes in SCM_RIGHTS messages.
  nrs.push_back(SYS_sendmsg);
  nrs.push_back(SYS_recvmsg);
  return nrs;
}

bool HostHandler::NeedsStop(long nr) const {
  switch (nr) {
    // The descriptor's new number is seen at the call's exit (dup, dup2, dup3 and fcntl's
    // copies are answered at their notification instead: DupAtNotification).
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

std::vector<CallHandler::TrapCondition> HostHandler::TrapOnlyWhen(long nr) const {
  if (nr == SYS_fcntl) return FcntlTrappedCommands();
  return {};
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

void HostHandler::ClearOwnUmask() {
  if (umask_cleared_) return;
  umask(0);
  umask_cleared_ = true;
}

Decision HostHandler::OnEntry(Thread& t, SyscallRegs& call) {
  ClearOwnUmask();
  const long nr = call.nr();
  if (MakingAgain(t.tid, nr)) return Decision::ObserveExit();  // on the real descriptor
  if (ChangesCredentials(nr)) {
    creds_.Invalidate(t.tid);
    return Decision::Pass();
  }
  const int a0 = static_cast<int>(call.arg(0));
  if (std::optional<Decision> d = descriptors_.OnEntry(t, call, listener_)) return *d;
  switch (nr) {
    case SYS_open:
    case SYS_creat:
    case SYS_openat:
    case SYS_openat2:
      return OpenCall(t, call);
    case SYS_fcntl:
      return Fcntl(t, call);
    case SYS_sendmsg:
      return Decision::Pass();
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
  return PathCall(t, call, CredsOf(t));
}

Decision HostHandler::PerformInstead(Thread& t, SyscallRegs& with, const Creds& c) {
  ClearOwnUmask();
  Decision d = PathCall(t, with, c, true);
  // Passed on, the call would run on the paths the tracee gave, which lead elsewhere.
  if (d.kind == Decision::Kind::kPass) return Decision::Emulate(-ENOSYS);
  return d;
}

Decision HostHandler::Mmap(Thread& t, SyscallRegs& call) {
  const uint64_t flags = call.arg(3);
  std::shared_ptr<HostFile> f =
      (flags & MAP_ANONYMOUS) ? nullptr : ShadowOf(t, static_cast<int>(call.arg(4)));
  if (!f) return Decision::Pass();
  if (fcntl(f->fd, F_GETFL) & O_PATH) return Decision::Emulate(-EBADF);  // no descriptor to map
  return OnRealFd(t, call, *f, 4);
}

Decision HostHandler::Fchdir(Thread& t, SyscallRegs& call) {
  std::shared_ptr<HostFile> f = ShadowOf(t, static_cast<int>(call.arg(0)));
  if (!f) return Decision::Pass();
  return OnRealFd(t, call, *f, 0);
}

Decision HostHandler::OnRealFd(Thread& t, SyscallRegs& call, HostFile& f, int fd_arg) {
  RemoteSyscalls rs(t, call, false, exit_sink_, listener_);
  const long real = PassDescriptor(rs, t, f.fd);
  if (real < 0) {
    // A full descriptor table: neither call needs a descriptor of its own.
    rs.ReturnFromCall(real == -EMFILE || real == -ENFILE || real == -ESRCH ? -ENOMEM : real);
    return Decision::Restart();
  }
  SyscallRegs with = call;
  with.set_arg(fd_arg, static_cast<uint64_t>(real));
  Pending p;
  p.kind = Pending::Kind::kOnRealFd;
  p.original = call;
  p.temp_fd = static_cast<int>(real);
  pending_[t.tid] = std::move(p);
  rs.FinishWith(with);
  return Decision::Restart();
}

bool HostHandler::MakingAgain(pid_t tid, long nr) const {
  auto it = pending_.find(tid);
  return it != pending_.end() && it->second.kind == Pending::Kind::kOnRealFd &&
         it->second.original.nr() == nr;
}

void HostHandler::OnExit(Thread& t, SyscallRegs& call) {
  if (descriptors_.OnExit(t, call)) return;
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
        descriptors_.Known(p.file);
      }
      break;
    case Pending::Kind::kRestore:
      break;
    case Pending::Kind::kOnRealFd: {
      const SyscallRegs out = WithOwnArguments(p.original, call);
      RemoteSyscalls rs(t, out, true, exit_sink_, listener_);
      rs.Call(SYS_close, static_cast<uint64_t>(p.temp_fd));
      rs.Restore();
      call = out;
      return;
    }
    case Pending::Kind::kNone:
      return;
  }
  call = WithOwnArguments(p.original, call);
}

void HostHandler::OnTaskExit(Thread& t) {
  if (t.proc->region) t.proc->region->Release(t.tid);
  descriptors_.Forget(t.tid);
  pending_.erase(t.tid);
  creds_.Invalidate(t.tid);  // its id may be given to another thread
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
