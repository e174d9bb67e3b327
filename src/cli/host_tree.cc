#include "cli/host_tree.h"

#include <dirent.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace amino::cli::host {

using schema::Result;
using schema::Status;

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Status Fd::Close() {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) return Status::Errno(errno);
  return Status::Ok();
}

Result<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (!dir) return Status::Errno(errno);
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    dirent* e = readdir(dir);
    if (!e) break;
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return Status::Errno(err);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> ReadLink(const std::string& path) {
  std::string buf(4096, '\0');
  for (;;) {
    ssize_t n = readlink(path.c_str(), buf.data(), buf.size());
    if (n < 0) return Status::Errno(errno);
    if (static_cast<size_t>(n) < buf.size()) {
      buf.resize(n);
      return buf;
    }
    buf.resize(buf.size() * 2);
  }
}

namespace {

Result<std::string> GetXattr(const std::string& path, const std::string& name) {
  for (;;) {
    ssize_t n = lgetxattr(path.c_str(), name.c_str(), nullptr, 0);
    if (n < 0) return Status::Errno(errno);
    std::string value(n, '\0');
    n = lgetxattr(path.c_str(), name.c_str(), value.data(), value.size());
    if (n >= 0) {
      value.resize(n);
      return value;
    }
    if (errno != ERANGE) return Status::Errno(errno);  // ERANGE: it grew; ask again
  }
}

}  // namespace

Result<Xattrs> GetXattrs(const std::string& path) {
  std::string list;
  for (;;) {
    ssize_t n = llistxattr(path.c_str(), nullptr, 0);
    if (n < 0) {
      if (errno == ENOTSUP) return Xattrs{};
      return Status::Errno(errno);
    }
    list.resize(n);
    n = llistxattr(path.c_str(), list.data(), list.size());
    if (n >= 0) {
      list.resize(n);
      break;
    }
    if (errno != ERANGE) return Status::Errno(errno);  // ERANGE: the list grew; ask again
  }
  Xattrs out;
  for (size_t pos = 0; pos < list.size();) {
    std::string name = list.c_str() + pos;
    pos += name.size() + 1;
    Result<std::string> value = GetXattr(path, name);
    if (!value.ok()) {
      if (value.status().error() == ENODATA) continue;  // removed since it was listed
      return value.status();
    }
    out.emplace_back(std::move(name), std::move(value).value());
  }
  return out;
}

Status SetXattr(const std::string& path, const std::string& name, const std::string& value) {
  if (lsetxattr(path.c_str(), name.c_str(), value.data(), value.size(), 0) != 0) {
    return Status::Errno(errno);
  }
  return Status::Ok();
}

Result<std::vector<Extent>> DataExtents(int fd, uint64_t size) {
  std::vector<Extent> out;
  uint64_t offset = 0;
  while (offset < size) {
    off_t data = lseek(fd, static_cast<off_t>(offset), SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole remains
      if (errno == EINVAL && offset == 0) return std::vector<Extent>{{0, size}};
      return Status::Errno(errno);
    }
    off_t hole = lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return Status::Errno(errno);
    uint64_t end = std::min<uint64_t>(static_cast<uint64_t>(hole), size);
    if (static_cast<uint64_t>(data) >= end) break;
    out.push_back({static_cast<uint64_t>(data), end});
    offset = end;
  }
  return out;
}

Result<size_t> ReadAt(int fd, uint64_t offset, char* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Errno(errno);
    }
    if (n == 0) break;
    done += n;
  }
  return done;
}

Status WriteAt(int fd, uint64_t offset, const char* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = pwrite(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Errno(errno);
    }
    done += n;
  }
  return Status::Ok();
}

}  // namespace amino::cli::host
