// A process's working directory as the monitor sees it, shared exactly as CLONE_FS shares it.
//
// Outside a mount the cwd is the kernel's, named by /proc/TID/cwd: read once, and again only
// after a chdir or after host directories were renamed (one above it may have moved).
//
// Inside a mount the kernel can hold no directory. Its cwd stays at the mount point's host
// directory, where calls that are not trapped find the mount's host side, and the cwd is
// virtual: a directory of the mount by file id. Its path is named again only when the mount's
// directories changed (their generation), and a hold keeps the directory counted open while
// it is anyone's cwd, as the kernel's cwd holds its inode. A removed cwd keeps its last path:
// the kernel keeps a dead directory's parent, so ".." still leads there.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace amino::monitor {

struct OpenFile;

// A directory of a mount made a cwd.
struct VirtualDir {
  int mount = -1;    // the mount's index in the mount handler's table
  uint64_t id = 0;   // the directory's file id
  std::string path;  // its mount-relative path at `generation`; "" once removed
  uint64_t generation = 0;
  std::string last;                // its path when it last had one
  std::shared_ptr<OpenFile> hold;  // counted open for as long as it is a cwd
};

class WorkingDir {
 public:
  bool is_virtual() const { return dir_.mount >= 0; }
  // The virtual cwd's mount index (-1: the kernel's cwd applies), its directory, last path.
  int mount() const { return dir_.mount; }
  uint64_t id() const { return dir_.id; }
  const std::string& last_path() const { return dir_.last; }

  // A chdir or fchdir succeeded: into `dir` of a mount (the kernel went to the mount point),
  // or (EnterHost) to a directory the kernel holds. Either way the kernel's cwd changed.
  void Enter(VirtualDir dir);
  void EnterHost();

  // The virtual cwd's mount-relative path at the mount's directory generation `generation`,
  // "" once removed. `path_of(id)` names the directory when directories changed since
  // (std::optional: nullopt when its name could not be read now, another transaction holding
  // it: "" for this time only, and asked again the next).
  template <class PathOf>
  std::string Path(uint64_t generation, PathOf&& path_of) {
    if (dir_.generation != generation) {
      std::optional<std::string> now = path_of(dir_.id);
      if (!now) return std::string();
      dir_.path = std::move(*now);
      dir_.generation = generation;
      if (!dir_.path.empty()) dir_.last = dir_.path;
    }
    return dir_.path;
  }

  // The kernel's cwd by its name, `read()` reading it when not known since the last chdir or
  // when host renames (`renames`, a count) happened since it was read.
  template <class ReadLink>
  const std::string& HostPath(uint64_t renames, ReadLink&& read) {
    if (host_path_.empty() || host_renames_ != renames) {
      host_path_ = read();
      host_renames_ = renames;
    }
    return host_path_;
  }

 private:
  VirtualDir dir_;
  std::string host_path_;
  uint64_t host_renames_ = 0;
};

// How a relative `path` is walked from a directory that was removed, a cwd or a directory
// descriptor, whose last mount-relative path was `last`. The kernel still finds the dead
// directory itself by "." and its kept parent by a leading ".."; every other name is gone.
struct WalkFromRemoved {
  enum class Kind {
    kItself,   // the path names the removed directory ("." , "./.")
    kFromUp,   // walk `rest` from the mount-relative directory `dir`, the removed one's parent
    kNowhere,  // ENOENT
  } kind = Kind::kNowhere;
  std::string dir;
  std::string rest;
};
WalkFromRemoved WalkFromRemovedDir(std::string_view last, std::string_view path);

// The mount-relative directory that holds `dir` ("/a/b": "/a"; "/": "/").
std::string ParentOf(std::string_view dir);

// getcwd(2)'s answer for a cwd whose host path is `path` ("" when removed) and a buffer of
// `size` bytes: the length to copy, its NUL included, or -errno in the kernel's order.
long GetcwdLength(std::string_view path, size_t size);

}  // namespace amino::monitor
