// Scratch directories for tests: created with mkdtemp under /tmp, removed with everything in
// them when the object goes out of scope.
#pragma once

#include <sys/types.h>

#include <string>

namespace amino::schema::testing {

// Removes `path` and everything below it without following symbolic links. Returns false (and
// leaves what it could not remove) on failure.
bool RemoveTree(const std::string& path);

class TempDir {
 public:
  // Creates /tmp/<prefix>XXXXXX with the given permission bits.
  explicit TempDir(const std::string& prefix, mode_t mode = 0755);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() followed by a mount-relative path: "/" maps to path() itself.
  std::string Map(const std::string& rel) const { return rel == "/" ? path_ : path_ + rel; }

 private:
  std::string path_;
};

}  // namespace amino::schema::testing
