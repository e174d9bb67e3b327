// Helpers shared by librvm's tests: scratch directories, the kernel's view of a region's page
// protections (/proc/self/maps), resident memory, and running a scenario in a child process
// (signal dispositions are process-wide, so scenarios that change them each get a process).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "amino/rvm.h"

namespace amino::rvm::testing {

inline uint64_t EnvNumber(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

inline size_t PageBytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "amino-rvm-XXXXXX").string();
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Bytes of [start, end) that the kernel maps writable.
inline size_t WritableBytes(uintptr_t start, uintptr_t end) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  size_t total = 0;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms;
    in >> range >> perms;
    size_t dash = range.find('-');
    uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (hi <= start || lo >= end || perms.size() < 2 || perms[1] != 'w') continue;
    total += std::min(hi, end) - std::max(lo, start);
  }
  return total;
}

inline size_t WritableBytes(const rvm_region* r) {
  auto base = reinterpret_cast<uintptr_t>(rvm_base(r));
  return WritableBytes(base, base + rvm_size(r));
}

inline bool PageWritable(const void* addr) {
  auto a = reinterpret_cast<uintptr_t>(addr) & ~(PageBytes() - 1);
  return WritableBytes(a, a + PageBytes()) == PageBytes();
}

// Resident memory of this process.
inline size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * PageBytes();
}

// Runs `body` in a forked child; returns its exit status (wait status decoded: exit code, or
// 128 + signal number).
inline int RunInChild(const std::function<int()>& body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// RAII: a volatile region unmapped at the end of the scope.
class Region {
 public:
  explicit Region(size_t size) {
    int err = rvm_map(size, 0, &r_);
    EXPECT_EQ(err, 0);
  }
  ~Region() {
    if (r_) {
      rvm_abort_to(0);
      EXPECT_EQ(rvm_unmap(r_), 0);
    }
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  rvm_region* get() const { return r_; }
  char* bytes() const { return static_cast<char*>(rvm_base(r_)); }
  size_t size() const { return rvm_size(r_); }

 private:
  rvm_region* r_ = nullptr;
};

}  // namespace amino::rvm::testing
