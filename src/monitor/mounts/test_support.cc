// Scratch directories for the mounts tests (see test_support.h).
#include "monitor/mounts/test_support.h"

#include <fcntl.h>
#include <ftw.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace amino::monitor::mounts::testing {

namespace {

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

}  // namespace

ScratchDir::ScratchDir() {
  char tmpl[] = "/tmp/amino-mounts-XXXXXX";
  const char* made = mkdtemp(tmpl);
  if (!made) {
    ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    return;
  }
  char* real = realpath(made, nullptr);
  path_ = real ? real : made;
  free(real);
}

ScratchDir::~ScratchDir() {
  if (!path_.empty()) nftw(path_.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);
}

void WriteFile(const std::string& path, std::string_view text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
}

void MakeDir(const std::string& path) {
  std::string partial;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i + 1);
    if (j == std::string::npos) j = path.size();
    partial = path.substr(0, j);
    if (!partial.empty() && mkdir(partial.c_str(), 0755) != 0) {
      ASSERT_EQ(errno, EEXIST) << partial << ": " << std::strerror(errno);
    }
    i = j;
  }
}

}  // namespace amino::monitor::mounts::testing
