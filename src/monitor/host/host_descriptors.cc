// Shadow descriptors under --emulate=host: fcntl, and POSIX record locks taken as OFD locks of
// a description per (file, process). (close, dup and close_range: descriptor_calls.h.)
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

void HostHandler::ReleasePosixLocksOf(Thread& t, OpenFile& f) {
  auto* shadow = dynamic_cast<HostFile*>(&f);
  struct stat st;
  if (!shadow || fstat(shadow->fd, &st) != 0) return;
  FileKey key{st.st_dev, st.st_ino};
  ReleasePosixLocks(t.proc->tgid, &key);
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

}  // namespace amino::monitor::host
