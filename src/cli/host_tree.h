// The host side of import and export: directory listings, symbolic links, extended attributes
// and the data extents of sparse files, read and written without following symbolic links.
// Failures are Status::Errno values; the caller names the path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schema/status.h"

namespace amino::cli::host {

using Xattrs = std::vector<std::pair<std::string, std::string>>;  // (name, value)

// A byte range [begin, end) of a file that holds data (everything else is a hole).
struct Extent {
  uint64_t begin = 0;
  uint64_t end = 0;
};

// An owned file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes now, reporting the error close(2) gives (deferred write errors show up here).
  schema::Status Close();

 private:
  int fd_;
};

// Entry names of a directory except "." and "..", sorted bytewise.
schema::Result<std::vector<std::string>> ListDir(const std::string& path);
schema::Result<std::string> ReadLink(const std::string& path);
// Every extended attribute of `path` itself (a symbolic link is not followed); empty where the
// file system has none.
schema::Result<Xattrs> GetXattrs(const std::string& path);
schema::Status SetXattr(const std::string& path, const std::string& name, const std::string& value);
// The data extents of an open file of `size` bytes, found with SEEK_DATA/SEEK_HOLE (the whole
// file where the file system cannot tell).
schema::Result<std::vector<Extent>> DataExtents(int fd, uint64_t size);
// Reads exactly `len` bytes at `offset` (fewer only at end of file).
schema::Result<size_t> ReadAt(int fd, uint64_t offset, char* buf, size_t len);
schema::Status WriteAt(int fd, uint64_t offset, const char* buf, size_t len);

}  // namespace amino::cli::host
