// The mount table: which host directories are Amino mounts and which database serves each.
// Immutable once built (by LoadMounts and PrepareMounts, mount_config.h); the monitor asks it
// for the mount a path lies in, comparing whole components (DESIGN.md §2).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace amino::monitor::mounts {

// How commits of the transactions on a mount are flushed (DESIGN.md §4).
enum class Durability {
  kAsync,  // the log reaches the OS at commit: survives a crash of the monitor, not of the machine
  kSync,   // every top-level commit is flushed to the disk
};
const char* DurabilityName(Durability d);  // "async", "sync"

struct Mount {
  // The mount point as configured: a normal absolute host path (lexical_path.h), never "/".
  std::string point;
  // The same directory as the kernel names it (getcwd, /proc/PID/cwd): `point` with symbolic
  // links resolved, set by PrepareMounts; equal to `point` before. Paths are matched against
  // both spellings.
  std::string host_point;
  // The database directory (normal absolute).
  std::string db_dir;
  // Unset: the run's --durability decides (async unless given).
  std::optional<Durability> durability;
  // The database is created (mkfs) on first use when it is missing or an empty directory.
  bool create = false;
  // Where the mount was declared: "FILE:LINE", "--mount" or "default".
  std::string origin;
  // The host directory at host_point, set by PrepareMounts (0 before): a caller that must check
  // a lexical conclusion with the kernel compares a stat with these.
  dev_t host_dev = 0;
  ino_t host_ino = 0;

  // The host spelling of the mount-relative path `rel` ("/" or "/a/b"): what getcwd reports for
  // a directory inside the mount.
  std::string HostPathOf(std::string_view rel) const;
};

// A path found inside a mount.
struct MountMatch {
  const Mount* mount = nullptr;
  // The mount-relative remainder: "/" for the mount point itself, else "/a/b". A view into the
  // path that was looked up.
  std::string_view rel;
};

class MountTable {
 public:
  MountTable() = default;
  // `mounts` must be valid: distinct mount points, none within another (LoadMounts checks).
  explicit MountTable(std::vector<Mount> mounts);
  // Move-only: callers hold pointers to its Mounts (moving keeps them valid).
  MountTable(MountTable&&) = default;
  MountTable& operator=(MountTable&&) = default;
  MountTable(const MountTable&) = delete;
  MountTable& operator=(const MountTable&) = delete;

  const std::vector<Mount>& mounts() const { return mounts_; }
  bool empty() const { return mounts_.empty(); }

  // The mount that the normal absolute host path `path` is in: its mount point (either
  // spelling) is `path` or a component prefix of it. /home/a/amino2 is not in /home/a/amino.
  std::optional<MountMatch> Find(std::string_view path) const;
  // The mount whose point (either spelling) is exactly the normal absolute path `path`, or
  // nullptr. Asked after every component a walk pushes, so it rejects by length first.
  const Mount* AtPoint(std::string_view path) const;

 private:
  struct Spelling {
    std::string_view path;  // into a Mount of mounts_
    const Mount* mount;
  };
  std::vector<Mount> mounts_;
  std::vector<Spelling> spellings_;  // point and host_point of each mount (once if equal)
  size_t min_length_ = 0;
  size_t max_length_ = 0;
};

}  // namespace amino::monitor::mounts
