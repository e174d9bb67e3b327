// Host symbolic links that lead into a mount (~/proj -> ~/amino/proj). The lexical walk of
// path_resolver.h cannot see them: it classifies such a path as a host path, and the kernel
// would follow the link to the mount point's own host directory, which is empty, so reads find
// nothing there and new files land on the host under the mount point. Given the host path the
// kernel would be given, IntoMount asks the kernel where its walk leads and, when that is inside
// a mount, gives the classification inside it.
//
// Cost: one stat of the path in the common case (it exists, and is no link the call follows);
// a second for a link the call follows, or for a name that does not exist yet (its directory is
// looked at). Only when the directory is missing too does it walk the path a component at a
// time (lstat, readlink), as the kernel does, to find a link into a mount partway.
//
// Mounts are recognized by the identity (device, inode) of their host directories: the mount
// point's, and those of the directories already under it on the host when the run started
// (empty ones a cwd was made ready in; PrepareMounts says when files are hidden there). A file
// hidden under a mount point is found through its directory. Other host files under a mount
// point can only have been put there from outside the traced tree.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"
#include "monitor/mounts/mount_table.h"
#include "monitor/mounts/path_resolver.h"

namespace amino::monitor::mounts {

class HostLinks {
 public:
  // Reads the host directories under each mount point (at most 1000 per mount).
  HostLinks(const MountTable& table, const PathResolver& resolver);

  // `abs`: an absolute host path, as the kernel would walk it from "/" (the lexical walk's host
  // result made absolute). `follow_last`: the call follows a link its path ends in. nullopt:
  // the kernel's walk stays outside every mount, or fails before it could enter one (the
  // kernel reports that itself). Otherwise the classification inside the mount (kAmino), or
  // the error of making it (ENAMETOOLONG).
  // `root`: the root of a process that called chroot, as the monitor names it; `abs` is then
  // the path as that process names it, walked from its root (its ".." and absolute link
  // targets stay below it).
  std::optional<Result<ClassifiedPath>> IntoMount(std::string_view abs, bool follow_last,
                                                  std::string_view root = "/") const;

  // Whether some mount has host directories recorded (false: IntoMount has nothing to find).
  bool empty() const { return dirs_.empty(); }

 private:
  struct InMountDir {
    const Mount* mount;
    std::string rel;  // mount-relative, "/" for the mount point
  };
  void Record(const Mount& m);
  // The mount directory with this identity, or nullptr.
  const InMountDir* Find(dev_t dev, ino_t ino) const;
  // `rest` (relative, may be empty) walked inside the directory `dir`.
  Result<ClassifiedPath> Inside(const InMountDir& dir, std::string_view rest) const;
  class View;
  std::optional<Result<ClassifiedPath>> Look(const View& view, std::string_view abs,
                                             bool follow_last) const;
  // The component-by-component walk, for a path whose end or directory is missing.
  std::optional<Result<ClassifiedPath>> Walk(const View& view, std::string_view abs,
                                             bool follow_last) const;

  const PathResolver& resolver_;
  std::map<std::pair<dev_t, ino_t>, InMountDir> dirs_;
  std::set<dev_t> hiding_devs_;  // devices of mount points with host files under them
};

}  // namespace amino::monitor::mounts
