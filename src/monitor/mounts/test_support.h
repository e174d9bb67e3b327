// What the mounts unit tests share: scratch directories on the host, removed afterwards.
#pragma once

#include <string>
#include <string_view>

namespace amino::monitor::mounts::testing {

// A fresh directory /tmp/amino-mounts-XXXXXX (its real path), removed with everything in it.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + rel
  std::string operator/(std::string_view rel) const { return path_ + "/" + std::string(rel); }

 private:
  std::string path_;
};

// Test fixtures' file helpers; each fails the current test on error.
void WriteFile(const std::string& path, std::string_view text);
void MakeDir(const std::string& path);  // and its missing parents

}  // namespace amino::monitor::mounts::testing
