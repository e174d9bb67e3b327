#include "monitor/shadow_fds.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "monitor/tracee_memory.h"

namespace amino::monitor {

std::vector<int> PassedFds(Process& p, uint64_t msghdr_addr) {
  std::vector<int> fds;
  msghdr m;
  if (ReadMemory(p, msghdr_addr, &m, sizeof m) != 0 || !m.msg_control ||
      m.msg_controllen < sizeof(cmsghdr) || m.msg_controllen > 65536) {
    return fds;
  }
  std::vector<char> control(m.msg_controllen);
  if (ReadMemory(p, reinterpret_cast<uint64_t>(m.msg_control), control.data(), control.size()) !=
      0) {
    return fds;
  }
  m.msg_control = control.data();
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_len < CMSG_LEN(0) ||
        reinterpret_cast<char*>(c) + c->cmsg_len > control.data() + control.size()) {
      break;  // a malformed message: the kernel refuses it too
    }
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const int* q = reinterpret_cast<const int*>(CMSG_DATA(c));
    fds.insert(fds.end(), q, q + n);
  }
  return fds;
}

void ApplyCloseRange(Thread& t, const SyscallRegs& call,
                     const std::function<void(OpenFile&)>& on_close) {
  const unsigned first = static_cast<unsigned>(call.arg(0));
  const unsigned last = static_cast<unsigned>(call.arg(1));
  const unsigned flags = static_cast<unsigned>(call.arg(2));
  if (flags & CLOSE_RANGE_UNSHARE) t.proc->fds = std::make_shared<FdTable>(*t.proc->fds);
  if (flags & CLOSE_RANGE_CLOEXEC) return;  // closed at exec, where the handler looks again
  auto& table = t.proc->fds->files;
  for (auto f = table.lower_bound(static_cast<int>(first));
       f != table.end() && static_cast<unsigned>(f->first) <= last;) {
    on_close(*f->second);
    f = table.erase(f);
  }
}

ino_t InodeOfFd(pid_t tid, int fd) {
  struct stat st;
  std::string path = "/proc/" + std::to_string(tid) + "/fd/" + std::to_string(fd);
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace amino::monitor

namespace amino::monitor {

namespace {

// The lowest number at or above `min` free in the table of the process `pidfd` names, found by
// asking for each number in turn (pidfd_getfd fails with EBADF on a free one); -errno.
int LowestFreeFrom(int pidfd, int min) {
  for (int fd = min; fd >= 0; ++fd) {
    const int copy = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
    if (copy >= 0) {
      close(copy);
    } else if (errno == EBADF) {
      return fd;
    } else {
      return -errno;
    }
  }
  return -EMFILE;
}

}  // namespace

Decision DupAtNotification(Thread& t, const SyscallRegs& call, ptrace_ext::NotifyListener& listener,
                           const std::function<void(OpenFile&)>& on_replace) {
  const long nr = call.nr();
  const int old_fd = static_cast<int>(call.arg(0));
  // dup and fcntl's copies take the lowest free number (fcntl's at or above a minimum, which
  // the kernel reads as 32 bits).
  const bool lowest = nr == SYS_dup || nr == SYS_fcntl;
  const int min = nr == SYS_fcntl ? static_cast<int>(static_cast<unsigned>(call.arg(2))) : 0;
  int new_fd = lowest ? -1 : static_cast<int>(call.arg(1));
  uint64_t flags = nr == SYS_dup3 ? call.arg(2) : 0;
  if (nr == SYS_fcntl && static_cast<int>(call.arg(1)) == F_DUPFD_CLOEXEC) flags = O_CLOEXEC;
  auto& files = t.proc->fds->files;
  auto old_it = files.find(old_fd);
  auto new_it = new_fd >= 0 ? files.find(new_fd) : files.end();
  if (old_it == files.end() && new_it == files.end()) {
    // Untracked on both sides. Another thread of the table could still get a served file at
    // `new_fd` before the kernel runs this dup2; that program races natively too (the
    // kernel would close its new file just the same).
    return Decision::Pass();
  }
  if ((flags & ~static_cast<uint64_t>(O_CLOEXEC)) != 0 || old_fd == new_fd ||
      (!lowest && new_fd < 0) || min < 0) {
    // EINVAL (dup3's flags or equal numbers, a minimum above any RLIMIT_NOFILE), dup2's no-op,
    // EBADF (a number above any RLIMIT_NOFILE): nothing changes.
    return Decision::Pass();
  }
  const int copy = CopyProcessFd(*t.proc, old_fd);
  if (copy < 0) return Decision::Emulate(copy);  // EBADF: old_fd is not open
  if (min > 0) {
    // Only the caller uses its table (the handler's condition), and it waits for this
    // answer: the number stays free until the copy is put there.
    new_fd = LowestFreeFrom(ProcessPidFd(*t.proc), min);
  }
  if (new_fd < -1) {
    close(copy);
    return Decision::Emulate(new_fd);
  }
  std::shared_ptr<OpenFile> file = old_it == files.end() ? nullptr : old_it->second;
  if (!file && (fcntl(copy, F_GETFL) & O_PATH)) {
    // The listener cannot install an O_PATH descriptor (ADDFD says EBADF). The kernel makes
    // this copy of one the monitor does not follow: the tracked file at new_fd is closed by it.
    close(copy);
    on_replace(*new_it->second);
    files.erase(new_it);
    return Decision::Pass();
  }
  long r = listener.ReplyWithFd(call.notification_id, copy, flags & O_CLOEXEC, new_fd);
  close(copy);
  if (r == -ENOENT) return Decision::Replied();  // the caller is gone
  // A number at or above RLIMIT_NOFILE: fcntl says EINVAL for such a minimum, and EMFILE when
  // every number from the minimum up to the limit is taken.
  if (r == -EBADF && min > 0) r = new_fd == min ? -EINVAL : -EMFILE;
  if (r < 0) return Decision::Emulate(r);  // EBADF (at or above RLIMIT_NOFILE), EMFILE
  const int fd = static_cast<int>(r);
  if (auto replaced = files.find(fd); replaced != files.end()) {
    on_replace(*replaced->second);
    files.erase(replaced);
  }
  if (file) files[fd] = std::move(file);
  return Decision::Replied();
}

}  // namespace amino::monitor
