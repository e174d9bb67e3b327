// The fixture of the schema's unit tests: a freshly made file system in its own temporary
// directory per test (removed afterwards), a root Client on it, and a scratch directory on the
// host for differential checks against the kernel. Every test ends with fsck.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "client.h"
#include "host.h"
#include "schema/filesystem.h"
#include "schema/fsck.h"
#include "temp_dir.h"

namespace amino::schema::testing {

class FsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Modes given to the schema are final (the caller applies its umask); make the host's the
    // same so the two sides can be compared.
    umask(0);
    db_ = std::make_unique<TempDir>("amino-schema-db-");
    host_ = std::make_unique<TempDir>("amino-schema-host-");
    Status st = FileSystem::Mkfs(db_->path() + "/fs");
    ASSERT_TRUE(st.ok()) << st.message();
    Reopen();
  }

  void TearDown() override {
    if (fs_) ExpectConsistent();
    fs_.reset();
  }

  // Closes and opens the file system again (what a restart of the monitor does).
  void Reopen() {
    fs_.reset();
    Result<std::unique_ptr<FileSystem>> fs = FileSystem::Open(db_->path() + "/fs");
    ASSERT_TRUE(fs.ok()) << fs.status().message();
    fs_ = std::move(fs).value();
  }

  void ExpectConsistent() {
    Result<std::vector<Violation>> v = Fsck(fs_->store());
    ASSERT_TRUE(v.ok()) << v.status().message();
    for (const Violation& x : *v) ADD_FAILURE() << "fsck: " << x.invariant << ": " << x.detail;
  }

  Client root() { return Client(fs_.get()); }
  Client user(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
    return Client(fs_.get(), Cred::User(uid, gid, std::move(groups)));
  }
  // The host path of a mount-relative path.
  std::string H(const std::string& rel) const { return host_->Map(rel); }

  // The same file, directory or symbolic link made on both sides (as root).
  void BothFile(const std::string& p, const std::string& data = "", mode_t mode = 0644) {
    Status st = root().WriteFile(p, data, mode);
    ASSERT_TRUE(st.ok()) << p << ": " << st.message();
    int fd = open(H(p).c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
    ASSERT_GE(fd, 0) << H(p) << ": " << std::strerror(errno);
    ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    close(fd);
  }
  void BothDir(const std::string& p, mode_t mode = 0755) {
    Result<Stat> st = root().Mkdir(p, mode);
    ASSERT_TRUE(st.ok()) << p << ": " << st.status().message();
    ASSERT_EQ(mkdir(H(p).c_str(), mode), 0) << H(p) << ": " << std::strerror(errno);
  }
  void BothSymlink(const std::string& target, const std::string& p) {
    Status st = root().Symlink(target, p);
    ASSERT_TRUE(st.ok()) << p << ": " << st.message();
    ASSERT_EQ(symlink(target.c_str(), H(p).c_str()), 0) << H(p) << ": " << std::strerror(errno);
  }
  void BothChown(const std::string& p, uid_t uid, gid_t gid) {
    Status st = root().Chown(p, uid, gid);
    ASSERT_TRUE(st.ok()) << p << ": " << st.message();
    ASSERT_EQ(chown(H(p).c_str(), uid, gid), 0) << H(p) << ": " << std::strerror(errno);
  }

  std::unique_ptr<TempDir> db_;
  std::unique_ptr<TempDir> host_;
  std::unique_ptr<FileSystem> fs_;
};

inline std::string ErrName(int err) {
  if (err == 0) return "ok";
  const char* n = strerrorname_np(err);
  return n ? n : std::to_string(err);
}

// The schema's errno for a call equals the kernel's for the same call on the scratch directory.
#define EXPECT_LINUX(schema_call, host_call)                                                 \
  EXPECT_EQ(::amino::schema::testing::ErrName(::amino::schema::testing::Err(schema_call)),   \
            ::amino::schema::testing::ErrName(::amino::schema::testing::HostErr(host_call))) \
      << #schema_call

// The schema's call fails with `err` (0: succeeds).
#define EXPECT_ERRNO(schema_call, err)                                                     \
  EXPECT_EQ(::amino::schema::testing::ErrName(::amino::schema::testing::Err(schema_call)), \
            ::amino::schema::testing::ErrName(err))                                        \
      << #schema_call

inline uint32_t FileType(const Stat& s) { return s.attr.mode & S_IFMT; }
inline uint32_t Perm(const Stat& s) { return s.attr.mode & 07777; }

}  // namespace amino::schema::testing
