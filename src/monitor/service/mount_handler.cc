// Dispatch of trapped calls under Amino mounts (Serve), and what a call's exit, a task's exit
// and an exec change in the descriptors and pending rewrites of a thread.
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
#include "monitor/service/program_copies.h"
#include "monitor/shadow_fds.h"
#include "monitor/shared_region.h"
#include "monitor/syscall_table.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

schema::Result<std::unique_ptr<MountHandler>> MountHandler::Create(mounts::MountTable table,
                                                                   const ServiceOptions& options) {
  auto opened =
      OpenMountFileSystems(table, options.sync, options.flush_user_commits || options.external);
  if (!opened.ok()) return opened.status();
  return std::unique_ptr<MountHandler>(
      new MountHandler(std::move(table), std::move(opened).value(), options));
}

MountHandler::MountHandler(mounts::MountTable table, std::vector<std::unique_ptr<MountFs>> mounts,
                           const ServiceOptions& options)
    : mount_table_(std::move(table)),
      resolver_(mount_table_),
      host_links_(mount_table_, resolver_),
      mounts_(std::move(mounts)),
      txns_(options.flush_user_commits, options.lock_timeout),
      external_(options.external) {
  // The file systems were opened on the table before it moved: point them at its new home.
  for (size_t i = 0; i < mounts_.size(); ++i) mounts_[i]->mount = &mount_table_.mounts()[i];
  mount_dirs_ = MountDirs(mount_table_);
  for (auto& m : mounts_) {
    MountFs* fs = m.get();
    fs->after_abort = [this, fs] { shared_maps_.RefreshAll(*fs); };
  }
}

void MountHandler::GuardHostDirs() {
  for (const auto& m : mounts_) {
    guards_.push_back(std::make_unique<HostDirGuard>(m->mount->host_point, m->mount->db_dir));
  }
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
  // Credential and umask changes: what the monitor caches of a thread no longer holds.
  std::vector<long> nrs = host::CredentialCalls();
  // Served descriptors travel between processes in SCM_RIGHTS messages.
  nrs.push_back(SYS_sendmsg);
  nrs.push_back(SYS_recvmsg);
  // AF_UNIX socket names in mounts (mount_sockets.cc).
  for (long nr :
       {SYS_bind, SYS_connect, SYS_getsockname, SYS_getpeername, SYS_sendto, SYS_sendmmsg}) {
    nrs.push_back(nr);
  }
  // A hole punched through a shared mapping (MadviseCall).
  nrs.push_back(SYS_madvise);
  // The kernel's mount calls (mount_kernel_mounts.cc).
  for (long nr : {SYS_mount, SYS_umount2, SYS_pivot_root, SYS_open_tree, SYS_move_mount, SYS_fspick,
                  SYS_mount_setattr, SYS_fsconfig}) {
    nrs.push_back(nr);
  }
  for (long i = 0; i < AMINO_SYS_COUNT; ++i) nrs.push_back(AMINO_SYS_BASE + i);
  if (external_) {
    for (long nr : OutputCalls()) nrs.push_back(nr);
  }
  return nrs;
}

std::vector<CallHandler::TrapCondition> MountHandler::TrapOnlyWhen(long nr) const {
  using Op = TrapCondition::Op;
  switch (nr) {
    case SYS_sendto:  // names a socket only with an address; send() is sendto without one
      if (external_) return {};  // an output call: every one is seen
      return {{4, Op::kNonzero}};
    case SYS_madvise:  // MADV_REMOVE punches a hole in a file (MadviseCall)
      return {{2, Op::kEquals, MADV_REMOVE}};
    case SYS_fcntl:
      return FcntlTrappedCommands();
    default:
      return {};
  }
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
    case SYS_chroot:  // given a host path in place of a relative one (Chroot)
    case SYS_bind:    // their address register is changed (mount_sockets.cc)
    case SYS_connect:
    case SYS_sendto:  // with an address only (TrapOnlyWhen)
    case SYS_sendmmsg:
    // The descriptor's new number is seen at the call's exit (dup, dup2, dup3 and fcntl's
    // copies are answered at their notification instead: DupAtNotification), and passed
    // descriptors at recvmsg's.
    case SYS_close_range:
    case SYS_recvmsg:
    case SYS_sendmsg:
    // Its flags are in memory, where the filter cannot see O_PATH, whose descriptor the
    // listener cannot install: a substitute path is given in its registers (as open's and
    // openat's O_PATH opens are: Tracer::FilterRules). openat2 is rare.
    case SYS_openat2:
      return true;
    default:
      // Signals are sent by the command's first process before the monitor takes the
      // notification listener: they stop for the tracer instead (they are rare).
      if (external_) {
        for (long out : OutputCalls()) {
          if (out == nr) return true;
        }
      }
      return false;
  }
}

host::Creds MountHandler::HostCredsOf(Thread& t) {
  const host::Creds* c = creds_.Get(t.tid);
  return c ? *c : host::Creds();
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

// The mount handler's table of routes: one case per call family, so that where each trapped
// call goes is read in one place; what is left is a descriptor call or a path call.
Decision MountHandler::Serve(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  if (host::ChangesCredentials(nr)) {
    creds_.Invalidate(t.tid);  // read again at the thread's next call
    return Decision::Pass();
  }
  const int a0 = static_cast<int>(call.arg(0));
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
    case SYS_openat2:
      return OpenAt2(t, call);
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
      return MmapCall(t, call);
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
    case SYS_bind:
      return Bind(t, call);
    case SYS_connect:
      return Connect(t, call);
    case SYS_sendto:
      return SendTo(t, call);
    case SYS_sendmmsg:
      return SendMmsg(t, call);
    case SYS_getsockname:
    case SYS_getpeername:
      return SocketName(t, call);
    case SYS_mount:
    case SYS_umount2:
    case SYS_pivot_root:
    case SYS_open_tree:
    case SYS_move_mount:
    case SYS_fspick:
    case SYS_mount_setattr:
    case SYS_fsconfig:
      return KernelMountCall(t, call);
    case SYS_chroot:
      return Chroot(t, call);
    case SYS_name_to_handle_at:
      return NameToHandle(t, call);
    case SYS_open_by_handle_at:
      return Decision::Pass();
    case SYS_sync:
    case SYS_msync:
      return SyncCall(t, call);
    case SYS_madvise:
      return MadviseCall(t, call);
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

// mmap: of a served file, served.
Decision MountHandler::MmapCall(Thread& t, SyscallRegs& call) {
  if (call.notified) {
    // A process's shared region is made at a stop, at its first file mapping. Then the kernel
    // maps host files as asked, and a served file as Mmap says.
    if (!t.proc->region) return Decision::StopFirst();
    if (!(call.arg(3) & MAP_ANONYMOUS)) {
      if (auto f = ServedOf(t, static_cast<int>(call.arg(4)))) return Mmap(t, call, *f);
    }
    return Decision::Pass();
  }
  if (!t.proc->region) {
    // Made early (every dynamically linked program maps files at start): a notified call
    // that needs a substitute path later can only use a region that already exists.
    Decision restart;
    if (!EnsureRegion(t, call, &restart)) return restart;
  }
  if (!(call.arg(3) & MAP_ANONYMOUS)) {
    if (auto f = ServedOf(t, static_cast<int>(call.arg(4)))) return Mmap(t, call, *f);
  }
  return Decision::Pass();
}

// sync and msync go to the kernel once what the monitor holds is where they expect it.
Decision MountHandler::SyncCall(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
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
}

// madvise(MADV_REMOVE) punches a hole in the file a shared mapping maps, which for a served
// file is its mapping file: the schema gets the same zeros before the kernel makes them.
Decision MountHandler::MadviseCall(Thread& t, SyscallRegs& call) {
  const uint64_t addr = call.arg(0), len = call.arg(1);
  // The kernel refuses an unaligned address, and anything but MADV_REMOVE is not trapped
  // (ptrace backend: every call stops).
  if (call.arg(2) != MADV_REMOVE || shared_maps_.empty() || addr % 4096 != 0) {
    return Decision::Pass();
  }
  const CallOutcome o = shared_maps_.RemoveMapped(t.proc->tgid, addr, len);
  if (o.kind == CallOutcome::Kind::kConflict) return Conflict();
  if (o.kind == CallOutcome::Kind::kStorage || !o.status.ok()) return Decision::Emulate(-EIO);
  return Decision::Pass();
}

void MountHandler::OnExit(Thread& t, SyscallRegs& call) {
  if (descriptors_.OnExit(t, call)) return;
  auto it = pending_.find(t.tid);
  if (it == pending_.end()) return;
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
        descriptors_.Known(f);
        files[static_cast<int>(r)] = std::move(f);
      }
      break;
    case Pending::Kind::kChdir:
    case Pending::Kind::kVirtualChdir:
      if (r == 0) ChangedCwd(t, p);
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
    case Pending::Kind::kSentOne:
      if (r >= 0) {
        const unsigned sent = static_cast<unsigned>(r);
        const bool told = WriteMemory(*t.proc, p.original.arg(1) + offsetof(mmsghdr, msg_len),
                                      &sent, sizeof sent) == 0;
        call.regs.rax = static_cast<unsigned long long>(told ? 1 : -EFAULT);
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
  call = WithOwnArguments(p.original, call);
}

void MountHandler::ChangedCwd(Thread& t, const Pending& p) {
  WorkingDir& cwd = t.proc->fs->cwd;
  if (p.kind == Pending::Kind::kVirtualChdir) {
    cwd.Enter(p.cwd);
  } else {
    cwd.EnterHost();
  }
}

void MountHandler::OnTaskExit(Thread& t) {
  if (t.proc->region) t.proc->region->Release(t.tid);
  descriptors_.Forget(t.tid);
  creds_.Invalidate(t.tid);  // its id may be given to another thread
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
