#include "monitor/tracee_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

namespace amino::monitor {
namespace {

int MemFd(Process& p) {
  if (p.mem_fd < 0) {
    std::string path = "/proc/" + std::to_string(p.tgid) + "/mem";
    p.mem_fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  }
  return p.mem_fd;
}

}  // namespace

int ReadMemory(Process& p, uint64_t addr, void* buf, size_t len) {
  int fd = MemFd(p);
  if (fd < 0) return errno;
  auto* dst = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = pread(fd, dst, len, static_cast<off_t>(addr));
    if (n <= 0) return EFAULT;  // EIO from /proc/PID/mem means an unmapped page
    dst += n;
    addr += static_cast<uint64_t>(n);
    len -= static_cast<size_t>(n);
  }
  return 0;
}

int WriteMemory(Process& p, uint64_t addr, const void* buf, size_t len) {
  int fd = MemFd(p);
  if (fd < 0) return errno;
  const auto* src = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = pwrite(fd, src, len, static_cast<off_t>(addr));
    if (n <= 0) return EFAULT;
    src += n;
    addr += static_cast<uint64_t>(n);
    len -= static_cast<size_t>(n);
  }
  return 0;
}

size_t WritePartial(Process& p, uint64_t addr, const void* buf, size_t len) {
  if (WriteMemory(p, addr, buf, len) == 0) return len;
  // Page by page up to the first unmapped one.
  size_t done = 0;
  const auto* src = static_cast<const char*>(buf);
  while (done < len) {
    size_t chunk = std::min(len - done, 4096 - ((addr + done) % 4096));
    if (WriteMemory(p, addr + done, src + done, chunk) != 0) break;
    done += chunk;
  }
  return done;
}

namespace {
// The snapshot of the call being served, and its process.
const StringSnapshot* g_snapshot = nullptr;
const Process* g_snapshot_of = nullptr;
}  // namespace

StringSnapshot::Scope::Scope(StringSnapshot& s, const Process& p) {
  g_snapshot = &s;
  g_snapshot_of = &p;
}

StringSnapshot::Scope::~Scope() {
  g_snapshot = nullptr;
  g_snapshot_of = nullptr;
}

int StringSnapshot::Take(Process& p, uint64_t addr) {
  if (Find(addr)) return 0;
  std::string s;
  if (int err = ReadString(p, addr, PATH_MAX, &s)) return err;
  strings_.emplace_back(addr, std::move(s));
  return 0;
}

const std::string* StringSnapshot::Find(uint64_t addr) const {
  for (const auto& [at, s] : strings_) {
    if (at == addr) return &s;
  }
  return nullptr;
}

int ReadString(Process& p, uint64_t addr, size_t max, std::string* out) {
  if (g_snapshot_of == &p) {
    if (const std::string* kept = g_snapshot->Find(addr)) {
      if (kept->size() >= max) return ENAMETOOLONG;
      *out = *kept;
      return 0;
    }
  }
  out->clear();
  int fd = MemFd(p);
  if (fd < 0) return errno;
  char chunk[256];
  while (out->size() < max) {
    // Never read across a page boundary in one go: the next page may be unmapped while the
    // string ends before it.
    size_t to_page = 4096 - (addr % 4096);
    size_t want = std::min({sizeof chunk, to_page, max - out->size()});
    ssize_t n = pread(fd, chunk, want, static_cast<off_t>(addr));
    if (n <= 0) return EFAULT;
    if (const void* nul = std::memchr(chunk, '\0', static_cast<size_t>(n))) {
      out->append(chunk, static_cast<const char*>(nul) - chunk);
      return 0;
    }
    out->append(chunk, static_cast<size_t>(n));
    addr += static_cast<uint64_t>(n);
  }
  return ENAMETOOLONG;
}

}  // namespace amino::monitor
