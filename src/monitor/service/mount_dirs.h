// The host directories a rename must not move: each mount point's, and every directory above it
// (but /). Moving one would carry the mount point's host directory to a name the monitor does
// not serve, where writes would reach the host directory the mount hides (the kernel refuses to
// move a mount point itself with EBUSY; an ancestor it moves, mounts and all). So renames of
// them fail with EBUSY under `amino run`. Known by device and inode, taken once at start.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <set>
#include <string>
#include <utility>

#include "monitor/mounts/mount_table.h"

namespace amino::monitor::service {

class MountDirs {
 public:
  MountDirs() = default;
  explicit MountDirs(const mounts::MountTable& table);

  // Whether `st` (an lstat) is a mount point's host directory, or (`above_too`) one above one.
  bool Holds(const struct stat& st, bool above_too) const;

  // The same for the path a tracee's rename names (`path`, relative to its directory
  // descriptor `dirfd` or working directory, or absolute from its root), as thread `tid`
  // resolves it; false when it cannot be looked at. The new name of a rename is checked only
  // for mount points (a directory above one is never empty: Linux refuses to replace it).
  bool Named(pid_t tid, int dirfd, const std::string& path, bool above_too) const;

 private:
  std::set<std::pair<dev_t, ino_t>> points_, above_;
};

}  // namespace amino::monitor::service
