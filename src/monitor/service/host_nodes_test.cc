// Host nodes standing for stored FIFOs and device nodes: what the kernel will check and open.
#include "monitor/service/host_nodes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace amino::monitor::service {
namespace {

schema::Attr AttrOf(mode_t mode, uid_t uid, gid_t gid, dev_t rdev = 0) {
  schema::Attr a;
  a.mode = mode;
  a.uid = uid;
  a.gid = gid;
  a.rdev = rdev;
  return a;
}

class HostNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Owners and device nodes need root; run elsewhere, the tests fail rather than pass unrun.
    if (geteuid() != 0) FAIL() << "needs root (owners, device nodes)";
  }
  struct stat Lstat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path << ": " << std::strerror(errno);
    return st;
  }
  HostNodes nodes_;
};

TEST_F(HostNodesTest, FifoHasTheStoredOwnerGroupAndMode) {
  std::string path;
  ASSERT_EQ(nodes_.Prepare(0, 42, AttrOf(S_IFIFO | 02640, 1234, 5678), &path), 0);
  EXPECT_EQ(path.rfind(nodes_.dir() + "/", 0), 0u);
  struct stat st = Lstat(path);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 02640u);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  EXPECT_EQ(Lstat(nodes_.dir()).st_mode & 07777, 0711u);
}

TEST_F(HostNodesTest, OneFifoPerStoredNodeKeepsItsPipeAcrossChanges) {
  std::string path, again, other_id, other_mount;
  ASSERT_EQ(nodes_.Prepare(0, 7, AttrOf(S_IFIFO | 0600, 0, 0), &path), 0);
  int rw = open(path.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(rw, 0);
  ASSERT_EQ(write(rw, "kept", 4), 4);
  // chmod and chown of the stored node: the same host node, brought up to date.
  ASSERT_EQ(nodes_.Prepare(0, 7, AttrOf(S_IFIFO | 0604, 65534, 65534), &again), 0);
  EXPECT_EQ(again, path);
  struct stat st = Lstat(path);
  EXPECT_EQ(st.st_mode & 07777, 0604u);
  EXPECT_EQ(st.st_uid, 65534u);
  int r = open(again.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(r, 0);
  char buf[8] = {};
  EXPECT_EQ(read(r, buf, sizeof buf), 4);
  EXPECT_STREQ(buf, "kept");
  close(r);
  close(rw);
  ASSERT_EQ(nodes_.Prepare(0, 8, AttrOf(S_IFIFO | 0600, 0, 0), &other_id), 0);
  ASSERT_EQ(nodes_.Prepare(1, 7, AttrOf(S_IFIFO | 0600, 0, 0), &other_mount), 0);
  EXPECT_NE(other_id, path);
  EXPECT_NE(other_mount, path);
}

TEST_F(HostNodesTest, DeviceNodesAreTheDevices) {
  std::string null_path, zero_path;
  ASSERT_EQ(nodes_.Prepare(0, 3, AttrOf(S_IFCHR | 0620, 0, 5, makedev(1, 3)), &null_path), 0);
  struct stat st = Lstat(null_path);
  if (null_path.rfind("/dev/char/", 0) != 0) {
    // Made here, unless only nodev file systems could hold the directory.
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0620u);
    EXPECT_EQ(st.st_gid, 5u);
  }
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  int fd = open(null_path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  EXPECT_EQ(write(fd, "gone", 4), 4);
  char buf[8];
  EXPECT_EQ(read(fd, buf, sizeof buf), 0);
  close(fd);
  // The same stored node made again as another device (removed, made anew with its id).
  ASSERT_EQ(nodes_.Prepare(0, 3, AttrOf(S_IFCHR | 0644, 0, 0, makedev(1, 5)), &zero_path), 0);
  EXPECT_EQ(Lstat(zero_path).st_rdev, makedev(1, 5));
  fd = open(zero_path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  memset(buf, 'x', sizeof buf);
  EXPECT_EQ(read(fd, buf, sizeof buf), static_cast<ssize_t>(sizeof buf));
  EXPECT_EQ(memcmp(buf, "\0\0\0\0\0\0\0\0", sizeof buf), 0);
  close(fd);
}

TEST_F(HostNodesTest, OnlyFifosAndDevicesHaveNodes) {
  std::string path;
  EXPECT_EQ(nodes_.Prepare(0, 9, AttrOf(S_IFREG | 0644, 0, 0), &path), -EINVAL);
  EXPECT_EQ(nodes_.Prepare(0, 9, AttrOf(S_IFSOCK | 0644, 0, 0), &path), -EINVAL);
}

TEST_F(HostNodesTest, RemoveTakesTheDirectoryAway) {
  std::string path;
  ASSERT_EQ(nodes_.Prepare(0, 1, AttrOf(S_IFIFO | 0644, 0, 0), &path), 0);
  const std::string dir = nodes_.dir();
  nodes_.Remove();
  EXPECT_NE(access(dir.c_str(), F_OK), 0);
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  // Made again on the next need.
  ASSERT_EQ(nodes_.Prepare(0, 1, AttrOf(S_IFIFO | 0644, 0, 0), &path), 0);
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace amino::monitor::service
