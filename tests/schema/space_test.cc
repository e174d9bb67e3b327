// Room on the database's file system (store_space.h), the parts a test can show without a full
// disk of its own (tests/hardening/full_disk_test.py fills one, as root): the reserve, what
// statfs leaves out, the claimed region files, and the SIGBUS guard's limits.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "fs_test.h"
#include "schema/store_space.h"

namespace amino::schema::testing {
namespace {

class SpaceTest : public FsTest {};

uint64_t Allocated(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
}

TEST_F(SpaceTest, AnOpenStoreHoldsItsReserveOnTheDisk) {
  const std::string dir = db_->path() + "/fs";
  const uint64_t reserve = fs_->store().space().reserve_bytes();
  EXPECT_GE(reserve, 4u << 20);
  EXPECT_LE(reserve, 32u << 20);
  EXPECT_GE(Allocated(dir + "/" + StoreSpace::kReserveFile), reserve);
  EXPECT_FALSE(fs_->store().space().low());
}

TEST_F(SpaceTest, StatfsLeavesOutWhatIsKeptForRemovals) {
  const std::string dir = db_->path() + "/fs";
  Transaction t = fs_->Begin().value();
  auto st = fs_->StatFs(t);
  ASSERT_TRUE(st.ok()) << st.status().message();
  ASSERT_TRUE(t.Commit().ok());
  struct statvfs host;
  ASSERT_EQ(statvfs(dir.c_str(), &host), 0);
  const uint64_t free = static_cast<uint64_t>(host.f_bavail) * host.f_frsize;
  const uint64_t shown = static_cast<uint64_t>(st->f_bavail) * st->f_bsize;
  const uint64_t kept = fs_->store().space().Kept();
  EXPECT_GE(kept, 2 * fs_->store().space().reserve_bytes());
  // The host's free space moves under a running system: a MiB of slack either way.
  EXPECT_LE(shown, free - kept + (1 << 20));
  EXPECT_GE(shown + (1 << 20), free - kept);
}

TEST_F(SpaceTest, RegionFilesHaveTheirPagesAllocated) {
  // A page of a sparse region file first touched on a full disk would be a SIGBUS: every page
  // up to each region file's size is allocated when the store opens.
  const std::string dir = db_->path() + "/fs";
  int regions = 0;
  for (const char* name : {"__db.001", "__db.002", "__db.003"}) {
    struct stat st;
    if (stat((dir + "/" + name).c_str(), &st) != 0) continue;
    ++regions;
    EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512 + 4096, static_cast<uint64_t>(st.st_size))
        << name;
  }
  EXPECT_GE(regions, 2);
}

// Makes `path` a file of `size` written bytes.
bool WriteBytes(const std::string& path, size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string data(size, 'x');
  const bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  close(fd);
  return ok;
}

// Whether [0, size) of `path` has no hole: the file holds no blocks past `size`, so it has
// them all below it when it holds that many. (SEEK_HOLE would not do: on ext4 allocated blocks
// not yet written count as a hole.)
bool NoHoleBefore(const std::string& path, uint64_t size) { return Allocated(path) >= size; }

TEST_F(SpaceTest, ClaimsAllocateWhatAFileGrewByAndWhatItGaveBack) {
  // A claim allocates only past where the last one ended, yet blocks given back below it (a
  // compaction cuts a file) or a new file at the same path are claimed whole again.
  StoreSpace space(host_->path());
  const std::string path = host_->path() + "/claimed";
  ASSERT_TRUE(WriteBytes(path, 1 << 20));
  ASSERT_TRUE(space.ClaimFile(path, 4 << 20));
  EXPECT_TRUE(NoHoleBefore(path, 4 << 20));
  ASSERT_TRUE(space.ClaimFile(path, 8 << 20));
  EXPECT_TRUE(NoHoleBefore(path, 8 << 20));

  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20), 0);
  close(fd);
  ASSERT_FALSE(NoHoleBefore(path, 8 << 20));
  ASSERT_TRUE(space.ClaimFile(path, 8 << 20));
  EXPECT_TRUE(NoHoleBefore(path, 8 << 20));

  ASSERT_EQ(unlink(path.c_str()), 0);
  ASSERT_TRUE(WriteBytes(path, 1 << 20));
  ASSERT_TRUE(space.ClaimFile(path, 8 << 20));
  EXPECT_TRUE(NoHoleBefore(path, 8 << 20));
}

// In a child: maps `path` one page longer than the file and touches the page past its end.
// Returns the child's wait status; its stderr goes to `err`.
int TouchPastTheEnd(const std::string& path, const std::string& err) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int efd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(efd, STDERR_FILENO);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) _exit(10);
    void* p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) _exit(11);
    static_cast<volatile char*>(p)[4096] = 1;
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

std::string ReadAll(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY);
  char buf[4096];
  ssize_t n;
  while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  if (fd >= 0) close(fd);
  return out;
}

// The child did not go on: killed by SIGBUS, or stopped by the handler that was there before
// the guard (a sanitizer's, which exits or aborts).
void ExpectStopped(int status) {
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the access went on";
  if (WIFSIGNALED(status)) {
    EXPECT_TRUE(WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT) << WTERMSIG(status);
  }
}

TEST_F(SpaceTest, GuardLeavesOtherFaultsToTheDefaultAction) {
  // Not a region file of an open store: the fault is what it would be without the guard.
  const std::string err = host_->path() + "/err";
  ExpectStopped(TouchPastTheEnd(host_->path() + "/plain", err));
  EXPECT_EQ(ReadAll(err).find("shared memory"), std::string::npos) << ReadAll(err);
}

TEST_F(SpaceTest, GuardGivesUpOnAPageNoAllocationCanBring) {
  // A region file shorter than its mapping (damaged): allocating is tried once, then the
  // process stops with the default action and says why, instead of faulting forever.
  const std::string err = host_->path() + "/err";
  ExpectStopped(TouchPastTheEnd(db_->path() + "/fs/__db.099", err));
  EXPECT_NE(ReadAll(err).find("shared memory cannot grow"), std::string::npos) << ReadAll(err);
  unlink((db_->path() + "/fs/__db.099").c_str());
}

}  // namespace
}  // namespace amino::schema::testing
