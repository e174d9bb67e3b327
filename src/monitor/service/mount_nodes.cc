// Opens of FIFOs and device nodes stored in a mount. The schema has checked the caller's access
// as for any file; the descriptor itself must be the kernel's (a pipe every opener shares, a
// device), so the open goes to the kernel on the host node standing for the stored one
// (host_nodes.h). At a ptrace stop the tracee's own call is pointed at it; a notified call
// cannot be changed, so the monitor opens the node with the caller's credentials and installs
// the descriptor, and reproduces a FIFO's waits itself without ever blocking.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "monitor/service/mount_handler.h"
#include "monitor/service/stat_convert.h"
#include "monitor/shared_region.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor::service {

Decision MountHandler::ReplyWithNode(Thread& t, const SyscallRegs& call, int fd, int flags,
                                     std::shared_ptr<NodeFile> node) {
  struct stat st;
  if (fstat(fd, &st) == 0) node->host_ino = st.st_ino;
  long r = listener_->ReplyWithFd(call.notification_id, fd, flags & O_CLOEXEC);
  if (r == -ENOENT) return Decision::Replied();  // the caller is gone
  if (r < 0) return Decision::Emulate(r);
  t.proc->fds->files[static_cast<int>(r)] = std::move(node);
  return Decision::Replied();
}

std::optional<Decision> MountHandler::NodeStat(Thread& t, SyscallRegs& call) {
  const long nr = call.nr();
  const int fd = static_cast<int>(call.arg(0));
  auto it = t.proc->fds->files.find(fd);
  if (it == t.proc->fds->files.end()) return std::nullopt;
  auto node = std::dynamic_pointer_cast<NodeFile>(it->second);
  if (!node) return std::nullopt;
  if (nr != SYS_fstat) {
    const uint64_t flags = nr == SYS_statx ? call.arg(2) : call.arg(3);
    std::string path;
    if (!(flags & AT_EMPTY_PATH) || ReadString(*t.proc, call.arg(1), 1, &path) != 0 ||
        !path.empty()) {
      return std::nullopt;
    }
  }
  schema::Stat st;
  CallOutcome o = RunCall(*node->mfs, [&](schema::Transaction& txn) -> schema::Status {
    auto r = node->mfs->fs->FStat(txn, node->id);
    if (!r.ok()) return r.status();
    st = *r;
    return schema::Status::Ok();
  });
  if (o.kind != CallOutcome::Kind::kDone || !o.status.ok()) return std::nullopt;
  long r;
  if (nr == SYS_statx) {
    const struct statx sx = ToStatx(st, node->mfs->dev, static_cast<unsigned>(call.arg(3)));
    r = WriteMemory(*t.proc, call.arg(4), &sx, sizeof sx) == 0 ? 0 : -EFAULT;
  } else {
    const struct stat out = ToStat(st, node->mfs->dev);
    r = WriteMemory(*t.proc, call.arg(nr == SYS_fstat ? 1 : 2), &out, sizeof out) == 0 ? 0
                                                                                       : -EFAULT;
  }
  return Decision::Emulate(r);
}

Decision MountHandler::OpenNode(Thread& t, SyscallRegs& call, MountFs& m, const schema::Stat& node,
                                int flags) {
  std::string path;
  if (int err = nodes_.Prepare(MountIndex(&m), node.ino, node.attr, &path))
    return Decision::Emulate(err);
  // The node exists: the kernel only opens it, never makes a file in its place.
  const int host_flags = flags & ~(O_CREAT | O_EXCL);
  auto record = std::make_shared<NodeFile>();
  record->mfs = &m;
  record->id = node.ino;
  if (call.notified) {
    const host::Creds* c = creds_.Get(t.tid);
    auto w = std::make_unique<FifoWait>();
    w->notification = call.notification_id;
    w->path = std::move(path);
    w->flags = host_flags;
    w->creds = c ? *c : host::Creds();
    w->node = std::move(record);
    if (S_ISFIFO(node.attr.mode)) return OpenFifoNotified(t, call, std::move(w));
    int fd;
    {
      // The monitor must not take the device as its controlling terminal.
      host::AsTracee as(w->creds);
      fd = open(w->path.c_str(), (host_flags | O_NOCTTY) & ~O_CLOEXEC);
    }
    if (fd < 0) return Decision::Emulate(-errno);
    host::ScopedFd owned(fd);
    return ReplyWithNode(t, call, fd, host_flags, std::move(w->node));
  }
  // openat(AT_FDCWD, host path, flags) in place of the call, whichever open it was (openat2's
  // RESOLVE_* rules were applied to the path in the mount); its registers are put back after.
  Decision restart;
  if (!EnsureRegion(t, call, &restart)) return restart;
  const uint64_t addr = t.proc->region->Put(t.tid, 0, path + '\0');
  if (!addr) return Decision::Emulate(-ENAMETOOLONG);
  Pending p;
  p.kind = Pending::Kind::kRestore;
  p.original = call;
  p.file = std::move(record);  // recorded for the descriptor the open returns
  pending_[t.tid] = std::move(p);
  call.regs.orig_rax = SYS_openat;
  call.regs.rdi = static_cast<uint64_t>(static_cast<int64_t>(AT_FDCWD));
  call.regs.rsi = addr;
  call.regs.rdx = static_cast<unsigned>(host_flags);
  call.regs.r10 = 0;
  return Decision::ObserveExit();
}

Decision MountHandler::OpenFifoNotified(Thread& t, SyscallRegs& call, std::unique_ptr<FifoWait> w) {
  const int access = w->flags & O_ACCMODE;
  const bool blocking = !(w->flags & O_NONBLOCK);
  auto park = [&] {
    fifo_waits_[t.tid] = std::move(w);
    return Decision::Park();  // a signal ends the wait as it ends the kernel's
  };
  if (w->reader.get() < 0) {
    int fd;
    {
      host::AsTracee as(w->creds);
      fd = open(w->path.c_str(), (w->flags | O_NONBLOCK | O_NOCTTY) & ~O_CLOEXEC);
    }
    if (fd < 0) {
      // ENXIO: no reader yet. A blocking writer waits for one.
      if (errno == ENXIO && access == O_WRONLY && blocking) return park();
      return Decision::Emulate(-errno);
    }
    if (access != O_RDONLY || !blocking) {
      host::ScopedFd owned(fd);
      if (blocking) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return ReplyWithNode(t, call, fd, w->flags, std::move(w->node));
    }
    w->reader.reset(fd);
  }
  // A blocking reader: done once a writer has come (it may have gone again since).
  if (!WriterCame(w->reader.get())) return park();
  const int fd = w->reader.get();
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return ReplyWithNode(t, call, fd, w->flags, std::move(w->node));  // our end closes with w
}

bool MountHandler::WriterCame(int fd) {
  // Data, or a writer that came and closed (POLLHUP counts the writers that came since this
  // end was opened).
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP))) return true;
  // A writer that holds it open with nothing written: tee(), which copies without consuming,
  // waits for data only while there is a writer, so without waiting it says which.
  if (probe_read_.get() < 0) {
    int ends[2];
    if (pipe2(ends, O_NONBLOCK | O_CLOEXEC) != 0) return false;
    probe_read_.reset(ends[0]);
    probe_write_.reset(ends[1]);
  }
  const ssize_t n = tee(fd, probe_write_.get(), 1, SPLICE_F_NONBLOCK);
  if (n > 0) {
    char sink[16];
    while (read(probe_read_.get(), sink, sizeof sink) > 0) {
    }
    return true;  // data came meanwhile
  }
  return n < 0 && errno == EAGAIN;
}

std::optional<Decision> MountHandler::ResumeFifoWait(Thread& t, SyscallRegs& call) {
  for (auto it = fifo_waits_.begin(); it != fifo_waits_.end();) {
    if (listener_ && listener_->Pending(it->second->notification)) {
      ++it;
    } else {
      it = fifo_waits_.erase(it);  // a reader's end goes with it, as the kernel's would
    }
  }
  if (!call.notified) return std::nullopt;
  auto it = fifo_waits_.find(t.tid);
  if (it == fifo_waits_.end() || it->second->notification != call.notification_id)
    return std::nullopt;
  std::unique_ptr<FifoWait> w = std::move(it->second);
  fifo_waits_.erase(it);
  return OpenFifoNotified(t, call, std::move(w));
}

}  // namespace amino::monitor::service
