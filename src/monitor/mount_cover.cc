#include "monitor/mount_cover.h"

#include <sched.h>
#include <sys/mount.h>

#include <algorithm>
#include <cerrno>

namespace amino::monitor {
namespace {

bool Below(const std::string& path, const std::string& dir) {
  return dir == "/" || path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

int CoverMountPoints(std::vector<std::string> points) {
  if (points.empty()) return 0;
  if (unshare(CLONE_NEWNS) != 0) return -errno;
  // Not shared with the host's namespace (a cover must not appear there), but fed by it.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return -errno;
  std::sort(points.begin(), points.end());
  int covered = 0;
  std::string last;
  for (const std::string& p : points) {
    if (p.empty() || p[0] != '/' || p == "/") continue;  // "/" itself: the monitor needs it
    if (!last.empty() && Below(p, last)) continue;       // hidden by the cover above it
    // One inode, no room: nothing can be made in it even by root, and it stays "empty".
    if (mount("amino-cover", p.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,nr_inodes=1,mode=0555") != 0) {
      continue;
    }
    last = p;
    ++covered;
  }
  return covered;
}

}  // namespace amino::monitor
