#include "monitor/working_dir.h"

#include <errno.h>
#include <limits.h>

#include <algorithm>
#include <utility>

namespace amino::monitor {

void WorkingDir::Enter(VirtualDir dir) {
  dir_ = std::move(dir);
  host_path_.clear();  // the kernel went to the mount point
}

void WorkingDir::EnterHost() {
  dir_ = VirtualDir();  // releases the hold
  host_path_.clear();
}

std::string ParentOf(std::string_view dir) {
  const size_t slash = dir.rfind('/');
  return slash == 0 || slash == std::string_view::npos ? "/" : std::string(dir.substr(0, slash));
}

WalkFromRemoved WalkFromRemovedDir(std::string_view last, std::string_view path) {
  WalkFromRemoved walk;
  size_t i = 0;
  while (i < path.size()) {
    const size_t end = std::min(path.find('/', i), path.size());
    const std::string_view name = path.substr(i, end - i);
    if (name == "..") {
      // The parent is known only by the last path; without one it cannot be walked from.
      if (last.empty()) return walk;
      const size_t next = path.find_first_not_of('/', end);
      walk.kind = WalkFromRemoved::Kind::kFromUp;
      walk.dir = ParentOf(last);
      walk.rest = next == std::string_view::npos ? "." : std::string(path.substr(next));
      return walk;
    }
    if (!name.empty() && name != ".") return walk;  // a name looked up in a dead directory
    i = end + 1;
  }
  // Only dots and slashes: the directory itself, but an empty path names nothing.
  if (!path.empty()) walk.kind = WalkFromRemoved::Kind::kItself;
  return walk;
}

long GetcwdLength(std::string_view path, size_t size) {
  if (path.empty()) return -ENOENT;
  const size_t length = path.size() + 1;
  if (length > PATH_MAX) return -ENAMETOOLONG;
  if (size < length) return -ERANGE;
  return static_cast<long>(length);
}

}  // namespace amino::monitor
