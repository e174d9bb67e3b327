// What every emulated host call needs: the calling thread's credentials and umask applied to the
// monitor's file-system identity, its path arguments, and its descriptors and cwd turned into
// descriptors the monitor can use with the *at calls.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "monitor/process_table.h"

namespace amino::monitor::host {

// A host file behind a shadow descriptor: the monitor's own descriptor of the file the tracee
// opened, and the placeholder (a memfd) the tracee holds in its place.
struct HostFile : OpenFile {
  int fd = -1;
  ino_t placeholder_ino = 0;
  ~HostFile() override;
};

struct Creds {
  uid_t ruid = 0;  // real ids: what access() checks against
  gid_t rgid = 0;
  uid_t fsuid = 0;
  gid_t fsgid = 0;
  uint64_t cap_effective = ~0ull;
  std::vector<gid_t> groups;
  mode_t umask = 022;
};

// Reads /proc/TID/status (cached per thread until Invalidate).
class CredCache {
 public:
  const Creds* Get(pid_t tid);
  void Invalidate(pid_t tid) { cache_.erase(tid); }
  void InvalidateAll() { cache_.clear(); }

 private:
  std::unordered_map<pid_t, Creds> cache_;
};

// Switches the monitor thread's fsuid, fsgid and groups to the tracee's for its lifetime, when
// the monitor is privileged and they differ; the kernel then checks permissions as for the
// tracee (a non-zero fsuid also drops the file capabilities). Restores root on destruction.
// `real`: use the real ids instead (access(2) checks those).
class AsTracee {
 public:
  explicit AsTracee(const Creds& c, bool real = false);
  ~AsTracee();
  AsTracee(const AsTracee&) = delete;
  AsTracee& operator=(const AsTracee&) = delete;

 private:
  bool switched_ = false;
};

// An fd the monitor opened for one call, closed at scope end.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd();
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  void reset(int fd);
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// The shadow behind tracee descriptor `fd`, or nullptr.
std::shared_ptr<HostFile> ShadowOf(Thread& t, int fd);

// A directory descriptor the monitor can pass to an *at call for the tracee's `dirfd` and
// `path`: AT_FDCWD-relative paths use the tracee's cwd, shadows their host descriptor, other
// descriptors the tracee's own through /proc. Returns -errno (EBADF for a bad dirfd).
int ResolveDirFd(Thread& t, int dirfd, const std::string& path, ScopedFd& holder);

// Reads a path argument as the kernel would: EFAULT, ENAMETOOLONG. /proc/self and
// /proc/thread-self are rewritten to the tracee's own entries, and a path through the tracee's
// own descriptor directory (/proc/PID/fd/N, /dev/fd/N) to a shadow becomes the monitor's path to
// the host file (*via_shadow is then set: not a kernel path).
// `table` finds other tracees whose descriptor directories a path may name.
int ReadPath(Thread& t, uint64_t addr, std::string* out, bool* via_shadow = nullptr,
             ProcessTable* table = nullptr);

// Paths whose meaning depends on the calling process or on kernel objects, left to the kernel.
bool IsKernelPath(const std::string& path);

}  // namespace amino::monitor::host
