#include "monitor/service/file_vmas.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>

namespace amino::monitor::service {

namespace {

// <linux/fs.h> of Linux 6.11; the build's headers may be older.
struct ProcmapQuery {
  uint64_t size;
  uint64_t query_flags;
  uint64_t query_addr;
  uint64_t vma_start;
  uint64_t vma_end;
  uint64_t vma_flags;
  uint64_t vma_page_size;
  uint64_t vma_offset;
  uint64_t inode;
  uint32_t dev_major;
  uint32_t dev_minor;
  uint32_t vma_name_size;
  uint32_t build_id_size;
  uint64_t vma_name_addr;
  uint64_t build_id_addr;
};
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr uint64_t kCoveringOrNext = 0x10;
constexpr uint64_t kFileBacked = 0x20;

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

std::optional<std::vector<FileVma>> FileVmasIn(pid_t pid, uint64_t addr, uint64_t len) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  Fd maps{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (maps.fd < 0) return std::nullopt;
  std::vector<FileVma> out;
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  for (uint64_t at = addr; at < end;) {
    ProcmapQuery q{};
    q.size = sizeof q;
    q.query_flags = kCoveringOrNext | kFileBacked;
    q.query_addr = at;
    if (ioctl(maps.fd, kProcmapQuery, &q) != 0) {
      if (errno == ENOENT) break;  // no file mapping at or after `at`
      if (errno == ENOTTY || errno == EINVAL) return FileVmasFromText(pid, addr, len);
      return std::nullopt;
    }
    if (q.vma_start >= end || q.vma_end <= at) break;
    out.push_back({q.vma_start, q.vma_end, q.vma_offset, makedev(q.dev_major, q.dev_minor),
                   static_cast<ino_t>(q.inode)});
    at = q.vma_end;
  }
  return out;
}

std::optional<std::vector<FileVma>> FileVmasFromText(pid_t pid, uint64_t addr, uint64_t len) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return std::nullopt;
  std::vector<FileVma> out;
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  std::string line;
  while (std::getline(maps, line)) {
    // start-end perms offset major:minor inode path
    unsigned long long start = 0, stop = 0, offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %*s %llx %x:%x %llu", &start, &stop, &offset, &major,
                    &minor, &inode) != 6 ||
        inode == 0) {
      continue;  // not a file mapping
    }
    if (stop <= addr || start >= end) continue;
    out.push_back({start, stop, offset, makedev(major, minor), static_cast<ino_t>(inode)});
  }
  return out;
}

std::optional<uint64_t> RemovableUpTo(pid_t pid, uint64_t addr, uint64_t len) {
  // Whole smaps, not PROCMAP_QUERY: only VmFlags shows VM_MAYWRITE ("mw") and VM_LOCKED
  // ("lo"). Dear (it counts each mapping's pages), but MADV_REMOVE is rare.
  std::ifstream smaps("/proc/" + std::to_string(pid) + "/smaps");
  if (!smaps) return std::nullopt;
  const uint64_t end = len > UINT64_MAX - addr ? UINT64_MAX : addr + len;
  bool in_range = false;  // the mapping whose lines are being read overlaps the range
  bool has_file = false;
  uint64_t start = 0;
  std::string line;
  while (std::getline(smaps, line)) {
    unsigned long long lo = 0, hi = 0, offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &offset, &major,
                    &minor, &inode) == 6) {
      in_range = hi > addr && lo < end;
      has_file = inode != 0;  // a private anonymous mapping has none (shared ones do: shmem)
      start = std::max<uint64_t>(lo, addr);
      if (lo >= end) break;
      continue;
    }
    if (!in_range || line.rfind("VmFlags:", 0) != 0) continue;
    auto flag = [&line](const char* f) {
      return line.find(std::string(" ") + f) != std::string::npos;
    };
    if (!has_file || flag("lo") || !flag("sh") || !flag("mw")) return start;
    in_range = false;
  }
  return end;
}

}  // namespace amino::monitor::service
