#include "monitor/shadow_fds.h"

#include <linux/close_range.h>
#include <sys/socket.h>
#include <sys/stat.h>

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
