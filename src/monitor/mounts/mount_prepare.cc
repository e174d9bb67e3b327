// Creating mount points and databases (see mount_prepare.h).
#include "monitor/mounts/mount_prepare.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "monitor/mounts/lexical_path.h"
#include "schema/filesystem.h"

namespace amino::monitor::mounts {

namespace {

// mkdir -p: every missing directory of the normal absolute `path` is created with `mode`.
// Returns 0 or an errno.
int MakeDirs(const std::string& path, mode_t mode) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (errno != ENOENT) return errno;
  PathStack stack;
  ComponentCursor c(path);
  while (c.Next()) {
    stack.Push(c.name());
    if (mkdir(stack.path().c_str(), mode) != 0 && errno != EEXIST) return errno;
  }
  if (stat(path.c_str(), &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

// True when `dir` is missing or an empty directory: a database to be made. (When it cannot be
// read at all, making it says why.)
bool NeedsMkfs(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return true;
  bool empty = true;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
}

// Files (anything but a directory) under directory `dir`, counted up to 1001 (a number to
// report, not to use). Empty directories hide nothing: a cwd made ready under a mount point
// before a run is one.
size_t CountFiles(const std::string& dir, size_t found = 0) {
  DIR* d = opendir(dir.c_str());
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    if (found > 1000) break;
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      found = CountFiles(path, found);
    } else {
      ++found;
    }
  }
  closedir(d);
  return found;
}

std::string RealPath(const std::string& path, int* err) {
  char* r = realpath(path.c_str(), nullptr);
  if (!r) {
    *err = errno;
    return "";
  }
  std::string out(r);
  free(r);
  *err = 0;
  return out;
}

}  // namespace

ConfigResult<PreparedMounts> PrepareMounts(const MountTable& table) {
  PreparedMounts out;
  std::vector<Mount> mounts = table.mounts();
  std::vector<std::string> real_dbs;
  for (Mount& m : mounts) {
    std::string who = m.origin + ": ";
    struct stat st;
    if (stat(m.point.c_str(), &st) != 0) {
      if (int err = MakeDirs(m.point, 0755); err != 0) {
        return ConfigError{who + "cannot create mount point " + m.point + ": " +
                           std::strerror(err)};
      }
      // Exactly 0755 whatever the umask: programs list and enter it.
      chmod(m.point.c_str(), 0755);
      out.actions.push_back("created mount point " + m.point);
      // The default mount's creation is the README's business; one the user named is said.
      if (m.origin != "default") out.notices.push_back(who + "created mount point " + m.point);
    }
    int err = 0;
    m.host_point = RealPath(m.point, &err);
    if (err == 0 && stat(m.host_point.c_str(), &st) != 0) err = errno;
    if (err == 0 && !S_ISDIR(st.st_mode)) err = ENOTDIR;
    if (err != 0) {
      return ConfigError{who + "mount point " + m.point + ": " + std::strerror(err)};
    }
    m.host_dev = st.st_dev;
    m.host_ino = st.st_ino;
    if (size_t n = CountFiles(m.host_point); n > 0) {
      out.notices.push_back(who + "the host directory " + m.host_point + " holds " +
                            (n > 1000 ? "more than 1000" : std::to_string(n)) +
                            (n == 1 ? " file" : " files") + ", hidden while the mount serves it");
    }

    if (m.create && NeedsMkfs(m.db_dir)) {
      std::string parent = m.db_dir.substr(0, std::max<size_t>(m.db_dir.rfind('/'), 1));
      if (int perr = MakeDirs(parent, 0700); perr != 0) {
        return ConfigError{who + "cannot create database directory " + m.db_dir + ": " + parent +
                           ": " + std::strerror(perr)};
      }
      Status st_mkfs = schema::FileSystem::Mkfs(m.db_dir);
      if (!st_mkfs.ok()) {
        return ConfigError{who + "cannot create a file system in " + m.db_dir + ": " +
                           st_mkfs.message()};
      }
      out.actions.push_back("created an empty Amino file system in " + m.db_dir);
    }
    std::string real_db = RealPath(m.db_dir, &err);
    if (err != 0) {
      return ConfigError{who + "database directory " + m.db_dir + ": " + std::strerror(err)};
    }
    real_dbs.push_back(real_db);
  }

  // Symbolic links can make two spellings one directory: check again on the resolved paths.
  for (size_t i = 0; i < mounts.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const Mount& a = mounts[j];
      const Mount& b = mounts[i];
      if (IsWithin(a.host_point, b.host_point) || IsWithin(b.host_point, a.host_point)) {
        return ConfigError{b.origin + ": mount point " + b.point + " (" + b.host_point +
                           ") and mount point " + a.point + " (" + a.origin + ", " + a.host_point +
                           ") are one directory or nested once symbolic links are resolved"};
      }
      if (real_dbs[i] == real_dbs[j]) {
        return ConfigError{b.origin + ": database directory " + b.db_dir + " and " + a.db_dir +
                           " (" + a.origin + ") are one directory (" + real_dbs[i] + ")"};
      }
    }
    for (size_t j = 0; j < mounts.size(); ++j) {
      if (IsWithin(real_dbs[i], mounts[j].host_point)) {
        return ConfigError{mounts[i].origin + ": database directory " + mounts[i].db_dir + " (" +
                           real_dbs[i] + ") is inside mount point " + mounts[j].point +
                           " once symbolic links are resolved"};
      }
    }
  }
  out.table = MountTable(std::move(mounts));
  return out;
}

}  // namespace amino::monitor::mounts
