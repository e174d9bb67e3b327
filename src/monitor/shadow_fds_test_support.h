// What the tests of shadow-descriptor bookkeeping share: the test's own process as the "tracee"
// (its memory and /proc entries are as readable as a traced process's), a tracked file, and
// an SCM_RIGHTS message.
#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "monitor/process_table.h"

namespace amino::monitor {

struct Tracked : OpenFile {
  explicit Tracked(ino_t ino) { placeholder_ino = ino; }
};

// A thread of a process that is this test itself.
inline Thread Self() {
  Thread t;
  t.tid = static_cast<pid_t>(syscall(SYS_gettid));
  t.proc = std::make_shared<Process>();
  t.proc->tgid = getpid();
  t.proc->fds = std::make_shared<FdTable>();
  return t;
}

inline uint64_t Address(const void* p) { return reinterpret_cast<uint64_t>(p); }

// A message carrying `fds` in one SCM_RIGHTS block, after an SCM_CREDENTIALS block.
class RightsMessage {
 public:
  explicit RightsMessage(const std::vector<int>& fds)
      : control_(CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int) * fds.size())) {
    msg_.msg_control = control_.data();
    msg_.msg_controllen = control_.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg_);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof(ucred));
    c = CMSG_NXTHDR(&msg_, c);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  msghdr* msg() { return &msg_; }

 private:
  std::vector<char> control_;
  msghdr msg_{};
};

}  // namespace amino::monitor
