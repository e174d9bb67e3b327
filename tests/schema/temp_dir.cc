#include "temp_dir.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace amino::schema::testing {
namespace {

int RemoveOne(const char* path, const struct stat* /*sb*/, int type, struct FTW* /*ftw*/) {
  int rc = (type == FTW_DP) ? rmdir(path) : unlink(path);
  if (rc != 0) std::perror(path);
  return 0;  // keep going: remove as much as possible
}

}  // namespace

bool RemoveTree(const std::string& path) {
  struct stat sb;
  if (lstat(path.c_str(), &sb) != 0) return true;
  // Tests leave directories without search or write permission behind; the tests run as root,
  // whose CAP_DAC_OVERRIDE lets the walk enter and empty them anyway.
  nftw(path.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);
  return lstat(path.c_str(), &sb) != 0;
}

TempDir::TempDir(const std::string& prefix, mode_t mode) {
  std::string templ = "/tmp/" + prefix + "XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + templ);
  path_ = buf.data();
  // mkdtemp creates 0700; other users must be able to search the scratch root so permission
  // tests compare like for like.
  chmod(path_.c_str(), mode);
}

TempDir::~TempDir() { RemoveTree(path_); }

}  // namespace amino::schema::testing
