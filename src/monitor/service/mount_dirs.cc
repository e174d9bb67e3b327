#include "monitor/service/mount_dirs.h"

#include <fcntl.h>

namespace amino::monitor::service {

MountDirs::MountDirs(const mounts::MountTable& table) {
  for (const mounts::Mount& m : table.mounts()) {
    struct stat st;
    if (stat(m.host_point.c_str(), &st) == 0) points_.insert({st.st_dev, st.st_ino});
    // Above it, under both spellings (a symbolic link on the way is a directory of its own).
    for (const std::string* spelling : {&m.point, &m.host_point}) {
      std::string dir = *spelling;
      for (;;) {
        const size_t slash = dir.rfind('/');
        if (slash == 0 || slash == std::string::npos) break;
        dir.erase(slash);
        if (stat(dir.c_str(), &st) == 0) above_.insert({st.st_dev, st.st_ino});
      }
    }
  }
}

bool MountDirs::Holds(const struct stat& st, bool above_too) const {
  if (!S_ISDIR(st.st_mode)) return false;
  const std::pair<dev_t, ino_t> key{st.st_dev, st.st_ino};
  return points_.count(key) > 0 || (above_too && above_.count(key) > 0);
}

bool MountDirs::Named(pid_t tid, int dirfd, const std::string& path, bool above_too) const {
  if (points_.empty() || path.empty()) return false;
  const std::string proc = "/proc/" + std::to_string(tid);
  std::string full;
  if (path[0] == '/') {
    full = proc + "/root" + path;
  } else if (dirfd == AT_FDCWD) {
    full = proc + "/cwd/" + path;
  } else {
    full = proc + "/fd/" + std::to_string(dirfd) + "/" + path;
  }
  while (full.size() > 1 && full.back() == '/') full.pop_back();
  struct stat st;
  return lstat(full.c_str(), &st) == 0 && Holds(st, above_too);
}

}  // namespace amino::monitor::service
