// What every emulated host call needs: the calling thread's credentials and umask applied to the
// monitor's file-system identity, its path arguments, and its descriptors and cwd turned into
// descriptors the monitor can use with the *at calls.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "monitor/process_table.h"

namespace amino::monitor::host {

struct Creds {
  uid_t ruid = 0;  // real ids: what access() checks against
  gid_t rgid = 0;
  uid_t fsuid = 0;
  gid_t fsgid = 0;
  uint64_t cap_effective = ~0ull;
  uint64_t cap_permitted = ~0ull;
  std::vector<gid_t> groups;
  mode_t umask = 022;
};

// Whether two sets of credentials grant the same: what the kernel compares when it asks whether
// a file was opened by the credentials now in use (linkat with AT_EMPTY_PATH).
bool SameCredentials(const Creds& a, const Creds& b);

// A host file behind a shadow descriptor: the monitor's own descriptor of the file the tracee
// opened, and the placeholder (a memfd) the tracee holds in its place.
struct HostFile : OpenFile {
  int fd = -1;
  // The credentials the tracee opened the file with, where known.
  std::optional<Creds> opener;
  ~HostFile() override;
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

// Switches the monitor thread's fsuid, fsgid, groups and effective capabilities to the tracee's
// for its lifetime, when the monitor is privileged and they differ; the kernel then checks
// permissions as for the tracee: file access, CAP_SYS_ADMIN for trusted.* and security.*
// attributes, CAP_MKNOD, CAP_FSETID (set-id bits cleared by a write), CAP_DAC_READ_SEARCH.
// The monitor keeps only what it needs to switch back and to reach the tracee's memory
// (CAP_SETUID, CAP_SETGID, CAP_SYS_PTRACE), none of which decides a file call. Restores root
// on destruction. `real`: use the real ids instead, with the capabilities access(2) gives them
// (all permitted ones for real uid 0, none otherwise).
class AsTracee {
 public:
  explicit AsTracee(const Creds& c, bool real = false);
  ~AsTracee();
  AsTracee(const AsTracee&) = delete;
  AsTracee& operator=(const AsTracee&) = delete;

 private:
  bool ids_switched_ = false;
  bool caps_switched_ = false;
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
// Calls after which what the monitor caches of the calling thread's credentials and umask is
// stale (glibc makes every thread issue them itself, so per-thread invalidation suffices).
const std::vector<long>& CredentialCalls();
bool ChangesCredentials(long nr);
// Whether `fds` has an entry (a shadow or served descriptor) numbered from `lo` to `hi`.
bool HoldsAnyIn(const FdTable& fds, uint64_t lo, uint64_t hi);

// A directory descriptor the monitor can pass to an *at call for the tracee's `dirfd` and
// `path`: AT_FDCWD-relative paths use the tracee's cwd, shadows their host descriptor, other
// descriptors the tracee's own through /proc. Returns -errno (EBADF for a bad dirfd).
// An absolute path gives AT_FDCWD unless `absolute_too` (openat2's RESOLVE_IN_ROOT, which
// resolves an absolute path inside the directory).
int ResolveDirFd(Thread& t, int dirfd, const std::string& path, ScopedFd& holder,
                 bool absolute_too = false);

// Reads a path argument as the kernel would: EFAULT, ENAMETOOLONG. /proc/self and
// /proc/thread-self are rewritten to the tracee's own entries, and a path through the tracee's
// own descriptor directory (/proc/PID/fd/N, /dev/fd/N) to a shadow becomes the monitor's path to
// the host file (*via_shadow is then set: not a kernel path).
// `table` finds other tracees whose descriptor directories a path may name.
int ReadPath(Thread& t, uint64_t addr, std::string* out, bool* via_shadow = nullptr,
             ProcessTable* table = nullptr);
// The rewriting ReadPath makes, of a path already read.
void RewriteProcPath(Thread& t, std::string* path, bool* via_shadow = nullptr,
                     ProcessTable* table = nullptr);

// Paths whose meaning depends on the calling process or on kernel objects, left to the kernel.
bool IsKernelPath(const std::string& path);

// The current path of a descriptor the monitor holds; empty if the file has no name any more.
std::string PathOfFd(int fd);

// The target of symbolic link `path` (a /proc link, say): "" when it has none or is too long.
std::string ReadLink(const std::string& path);

}  // namespace amino::monitor::host
