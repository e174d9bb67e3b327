// The file mappings of a process that overlap an address range, with the file each maps (device
// and inode) and the file offset it starts at. Asked of the kernel one mapping at a time with
// PROCMAP_QUERY (Linux 6.11), which costs a few microseconds, where the text of /proc/PID/maps
// costs the kernel a line with a path for every mapping of the process (an msync of one file
// read all of them); the text is read where the ioctl is missing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace amino::monitor::service {

struct FileVma {
  uint64_t start = 0, end = 0;  // addresses [start, end)
  uint64_t offset = 0;          // the file offset mapped at `start`
  dev_t dev = 0;
  ino_t ino = 0;
};

// The file-backed mappings of `pid` that overlap [addr, addr + len), in address order; nullopt
// when the process's mappings cannot be read.
std::optional<std::vector<FileVma>> FileVmasIn(pid_t pid, uint64_t addr, uint64_t len);

// The same from the text of /proc/PID/maps alone (what FileVmasIn falls back to).
std::optional<std::vector<FileVma>> FileVmasFromText(pid_t pid, uint64_t addr, uint64_t len);

}  // namespace amino::monitor::service
