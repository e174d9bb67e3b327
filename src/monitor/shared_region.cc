#include "monitor/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "monitor/tracee_memory.h"

namespace amino::monitor {

namespace {

// memfd_create needs a name in the tracee's memory; an empty one will do, and the words just
// above the stack pointer (return addresses, small integers) always hold a zero byte.
uint64_t FindNulByte(Process& p, uint64_t rsp) {
  unsigned char buf[256];
  if (ReadMemory(p, rsp, buf, sizeof buf) != 0) return 0;
  for (size_t i = 0; i < sizeof buf; ++i) {
    if (buf[i] == 0) return rsp + i;
  }
  return 0;
}

}  // namespace

std::shared_ptr<SharedRegion> SharedRegion::Create(Thread& t, RemoteSyscalls& rs, int* err) {
  SyscallRegs now;
  now.regs = rs.saved().regs;
  uint64_t name = FindNulByte(*t.proc, now.regs.rsp);
  if (!name) {
    *err = EFAULT;
    return nullptr;
  }
  long fd = rs.Call(SYS_memfd_create, name, MFD_CLOEXEC);
  if (fd < 0) {
    *err = static_cast<int>(-fd);
    return nullptr;
  }
  long r = rs.Call(SYS_ftruncate, static_cast<uint64_t>(fd), kSize);
  long base =
      r < 0 ? r : rs.Call(SYS_mmap, 0, kSize, PROT_READ, MAP_SHARED, static_cast<uint64_t>(fd), 0);
  // The monitor's own view of the same memfd, through the tracee's descriptor.
  std::string path = "/proc/" + std::to_string(t.tid) + "/fd/" + std::to_string(fd);
  int local_fd = base < 0 ? -1 : open(path.c_str(), O_RDWR | O_CLOEXEC);
  rs.Call(SYS_close, static_cast<uint64_t>(fd));
  if (base < 0 || local_fd < 0) {
    *err = base < 0 ? static_cast<int>(-base) : errno;
    return nullptr;
  }
  void* local = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, local_fd, 0);
  int map_err = errno;
  close(local_fd);
  if (local == MAP_FAILED) {
    *err = map_err;
    return nullptr;
  }
  auto region = std::shared_ptr<SharedRegion>(new SharedRegion());
  region->local_ = static_cast<char*>(local);
  region->tracee_base_ = static_cast<uint64_t>(base);
  for (size_t i = kSlots; i > 0; --i) region->free_.push_back(i - 1);
  return region;
}

SharedRegion::~SharedRegion() {
  if (local_) munmap(local_, kSize);
}

uint64_t SharedRegion::Put(pid_t tid, size_t offset, std::string_view bytes) {
  if (offset + bytes.size() > kSlotSize) return 0;
  auto it = slot_of_.find(tid);
  if (it == slot_of_.end()) {
    if (free_.empty()) return 0;
    it = slot_of_.emplace(tid, free_.back()).first;
    free_.pop_back();
  }
  size_t at = it->second * kSlotSize + offset;
  std::memcpy(local_ + at, bytes.data(), bytes.size());
  return tracee_base_ + at;
}

void SharedRegion::Release(pid_t tid) {
  auto it = slot_of_.find(tid);
  if (it == slot_of_.end()) return;
  free_.push_back(it->second);
  slot_of_.erase(it);
}

}  // namespace amino::monitor
