#include "monitor/pass_descriptor.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "monitor/host/host_context.h"
#include "monitor/tracee_memory.h"

namespace amino::monitor {

uint64_t MappingStart(pid_t tid, uint64_t addr) {
  std::ifstream maps("/proc/" + std::to_string(tid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) == 2 && lo <= addr && addr < hi) {
      return lo;
    }
  }
  return 0;
}

long PassDescriptor(RemoteSyscalls& rs, Thread& t, int fd) {
  constexpr size_t kPair = 0, kMsg = 16, kIov = kMsg + sizeof(msghdr), kByte = kIov + 16,
                   kCtl = kByte + 16, kCtlLen = CMSG_SPACE(sizeof(int)), kSize = kCtl + kCtlLen;
  const uint64_t rsp = rs.saved().regs.rsp;
  const uint64_t base = (rsp - kRedZone - kSize) & ~uint64_t{15};
  const uint64_t low = MappingStart(t.tid, rsp - 1);
  if (!low || base < low) return -ENOMEM;
  const uint64_t pair = base + kPair;
  long r = rs.Call(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair);
  if (r < 0) return r;
  int sv[2];
  if (ReadMemory(*t.proc, pair, sv, sizeof sv) != 0) return -EFAULT;
  auto close_pair = [&] {
    rs.Call(SYS_close, static_cast<uint64_t>(sv[0]));
    rs.Call(SYS_close, static_cast<uint64_t>(sv[1]));
  };
  {
    host::ScopedFd end(CopyProcessFd(*t.proc, sv[0]));
    if (end.get() < 0) {
      const int err = -end.get();
      close_pair();
      return -err;
    }
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctl[kCtlLen] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(end.get(), &msg, MSG_DONTWAIT) != 1) {
      const int err = errno;
      close_pair();
      return -err;
    }
  }
  // The tracee's recvmsg: msghdr, iovec, one byte and the control buffer.
  msghdr msg{};
  msg.msg_iov = reinterpret_cast<iovec*>(base + kIov);
  msg.msg_iovlen = 1;
  msg.msg_control = reinterpret_cast<void*>(base + kCtl);
  msg.msg_controllen = kCtlLen;
  const uint64_t iov[2] = {base + kByte, 1};
  std::string blob(kSize - kMsg, '\0');
  std::memcpy(blob.data(), &msg, sizeof msg);
  std::memcpy(blob.data() + (kIov - kMsg), iov, sizeof iov);
  if (WriteMemory(*t.proc, base + kMsg, blob.data(), blob.size()) != 0) {
    close_pair();
    return -EFAULT;
  }
  r = rs.Call(SYS_recvmsg, static_cast<uint64_t>(sv[1]), base + kMsg,
              MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  close_pair();
  if (r != 1) return r < 0 ? r : -EIO;
  alignas(cmsghdr) char ctl[kCtlLen];
  if (ReadMemory(*t.proc, base + kCtl, ctl, sizeof ctl) != 0) return -EFAULT;
  const cmsghdr* c = reinterpret_cast<const cmsghdr*>(ctl);
  if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int))) {
    return -EIO;
  }
  int got;
  std::memcpy(&got, CMSG_DATA(c), sizeof got);
  return got;
}

}  // namespace amino::monitor
