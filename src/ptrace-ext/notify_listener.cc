#include "ptrace-ext/notify_listener.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "ptrace-ext/cpu_colocation.h"

namespace amino::ptrace_ext {
namespace {

// Linux 6.6; Debian 12's headers predate it. The flags travel in the argument itself.
constexpr unsigned long kNotifSetFlags = _IOW('!', 4, __u64);
constexpr __u64 kNotifSyncWakeUp = 1;

}  // namespace

NotifyListener::~NotifyListener() {
  if (fd_ >= 0) close(fd_);
}

void NotifyListener::Reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  addfd_send_ = true;
}

bool NotifyListener::SetSyncWakeUp() { return ioctl(fd_, kNotifSetFlags, kNotifSyncWakeUp) == 0; }

bool NotifyListener::Receive(Notification* n) {
  seccomp_notif req;
  std::memset(&req, 0, sizeof req);  // the kernel insists on a zeroed request
  if (ioctl(fd_, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return false;
  n->id = req.id;
  n->tid = static_cast<pid_t>(req.pid);
  n->data = req.data;
  received_id_ = req.id;
  received_tid_ = n->tid;
  return true;
}

bool NotifyListener::Next(Notification* n) {
  if (deferred_.empty()) return Receive(n);
  *n = deferred_.front();
  deferred_.pop_front();
  return true;
}

bool NotifyListener::Continue(uint64_t id) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  return ioctl(fd_, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0;
}

bool NotifyListener::Reply(uint64_t id, long result) {
  seccomp_notif_resp resp{};
  resp.id = id;
  if (result < 0 && result >= -4095) {
    resp.error = static_cast<int32_t>(result);
  } else {
    resp.val = result;
  }
  return ioctl(fd_, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0;
}

long NotifyListener::ReplyWithFd(uint64_t id, int fd, bool cloexec, int at) {
  seccomp_notif_addfd add{};
  add.id = id;
  add.srcfd = static_cast<__u32>(fd);
  add.newfd_flags = cloexec ? O_CLOEXEC : 0;
  const __u32 setfd = at >= 0 ? SECCOMP_ADDFD_FLAG_SETFD : 0;
  add.newfd = at >= 0 ? static_cast<__u32>(at) : 0;
  add.flags = setfd;
  // The call received last is nearly always the one answered (a call the monitor parked and
  // answers later is not worth a lookup).
  if (colocate_ && id == received_id_) {
    // Installed, then answered once the caller has its CPUs back: an answer sent with the
    // install would let it run, fork or look at its CPUs before they are given back.
    long r;
    {
      CpuColocation together(received_tid_);
      r = ioctl(fd_, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
      if (r < 0) r = -errno;
    }
    if (r < 0) return r;
    return Reply(id, r) ? r : -errno;
  }
  if (addfd_send_) {
    add.flags = SECCOMP_ADDFD_FLAG_SEND | setfd;
    long r = ioctl(fd_, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
    if (r >= 0) return r;
    if (errno != EINVAL) return -errno;
    addfd_send_ = false;  // an older kernel: install, then answer
    add.flags = setfd;
  }
  long r = ioctl(fd_, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
  if (r < 0) return -errno;
  // The caller waits killably once its call was received, so only its death can come between
  // installing the descriptor and answering, and then the descriptor goes with it.
  if (!Reply(id, r)) return -errno;
  return r;
}

bool NotifyListener::Pending(uint64_t id) {
  return ioctl(fd_, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int TakeListener(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return -errno;
  int target = -1;
  while (dirent* e = readdir(d)) {
    char link[64];
    ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    if (std::strcmp(link, "anon_inode:seccomp notify") == 0) {
      target = std::atoi(e->d_name);
      break;
    }
  }
  closedir(d);
  if (target < 0) return -ENOENT;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return -errno;
  int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, target, 0));
  int err = errno;
  close(pidfd);
  return fd < 0 ? -err : fd;
}

}  // namespace amino::ptrace_ext
