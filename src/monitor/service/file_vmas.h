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

// How far madvise(addr, len, MADV_REMOVE) gets in `pid`: the kernel punches a hole in the file
// of each mapping in the range, in address order, and stops at the first it refuses (mm/madvise.c:
// one locked, of no file, or not both shared and writable: EINVAL or EACCES). Returns the
// address it stops at (`addr` when it refuses the first mapping, addr + len when none), read
// from the VmFlags of /proc/PID/smaps; nullopt when they cannot be read.
std::optional<uint64_t> RemovableUpTo(pid_t pid, uint64_t addr, uint64_t len);

}  // namespace amino::monitor::service
