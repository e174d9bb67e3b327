#include "monitor/service/host_nodes.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

namespace amino::monitor::service {

namespace {

// The device's own node, as udev names it by number, when it exists: 0, or -err.
int DeviceItself(mode_t type, dev_t rdev, int err, std::string* path) {
  std::string p = std::string(type == S_IFCHR ? "/dev/char/" : "/dev/block/") +
                  std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev));
  struct stat st;
  if (stat(p.c_str(), &st) != 0 || (st.st_mode & S_IFMT) != type || st.st_rdev != rdev) {
    return -err;
  }
  *path = std::move(p);
  return 0;
}

}  // namespace

int HostNodes::MakeDir() {
  // In memory where possible; device nodes need a file system not mounted nodev (Debian mounts
  // /dev/shm and /run so), FIFOs do not.
  const char* bases[] = {"/dev/shm", "/run", "/tmp", "/var/tmp"};
  int err = ENOENT;
  for (int pass = 0; pass < 2; ++pass) {
    for (const char* base : bases) {
      struct statvfs vfs;
      if (statvfs(base, &vfs) != 0 || (vfs.f_flag & ST_RDONLY)) continue;
      const bool nodev = vfs.f_flag & ST_NODEV;
      if (pass == 0 && nodev) continue;
      std::string dir = std::string(base) + "/amino-nodes.XXXXXX";
      if (!mkdtemp(dir.data())) {
        err = errno;
        continue;
      }
      chmod(dir.c_str(), 0711);  // searchable by the tracees' users, not listable
      dir_ = std::move(dir);
      devices_open_ = !nodev;
      return 0;
    }
  }
  return err;
}

int HostNodes::Prepare(int mount, schema::FileId id, const schema::Attr& attr, std::string* path) {
  const mode_t type = attr.mode & S_IFMT;
  if (type != S_IFIFO && type != S_IFCHR && type != S_IFBLK) return -EINVAL;
  if (dir_.empty()) {
    if (int err = MakeDir()) return -err;
  }
  const dev_t rdev = type == S_IFIFO ? 0 : static_cast<dev_t>(attr.rdev);
  const std::string node = dir_ + "/" + std::to_string(mount) + "." + std::to_string(id);
  struct stat st;
  bool exists = lstat(node.c_str(), &st) == 0;
  if (exists && ((st.st_mode & S_IFMT) != type || (type != S_IFIFO && st.st_rdev != rdev))) {
    unlink(node.c_str());
    exists = false;
  }
  if (!exists) {
    if (type != S_IFIFO && !devices_open_) return DeviceItself(type, rdev, EACCES, path);
    // Only the monitor may open it until it has the stored node's owner and mode.
    if (mknod(node.c_str(), type | 0600, rdev) != 0) {
      const int err = errno;
      return type == S_IFIFO ? -err : DeviceItself(type, rdev, err, path);
    }
    if (lstat(node.c_str(), &st) != 0) return -errno;
  }
  if (int err = Match(node, st, attr)) return err;
  *path = node;
  return 0;
}

int HostNodes::SocketPath(int mount, schema::FileId id, std::string* path) {
  if (dir_.empty()) {
    if (int err = MakeDir()) return -err;
  }
  std::string node = dir_ + "/s" + std::to_string(mount) + "." + std::to_string(id);
  if (unlink(node.c_str()) != 0 && errno != ENOENT) return -errno;
  *path = std::move(node);
  return 0;
}

int HostNodes::MatchSocket(const std::string& path, const schema::Attr& attr) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return -ECONNREFUSED;
  return Match(path, st, attr);
}

int HostNodes::Match(const std::string& node, const struct stat& st, const schema::Attr& attr) {
  // The owner first: chown clears the set-id bits the mode may carry.
  bool owned = st.st_uid == attr.uid && st.st_gid == attr.gid;
  bool set_mode = false;
  if (!owned && lchown(node.c_str(), attr.uid, attr.gid) == 0) {
    owned = true;
    set_mode = true;
  }
  mode_t mode = attr.mode & 07777;
  // A monitor without CAP_CHOWN keeps the node as its own; its tracees run as its user, so the
  // kernel looks at the owner's bits, while the schema has already checked the stored ones.
  if (!owned) mode |= 0600;
  if (set_mode || (st.st_mode & 07777) != mode) {
    if (chmod(node.c_str(), mode) != 0) return -errno;
  }
  return 0;
}

void HostNodes::Remove() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  dir_.clear();
}

}  // namespace amino::monitor::service
