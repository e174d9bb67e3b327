// Advisory locks on served files, against the kernel's rules (fcntl(2), flock(2)): record
// locks belong to a process and a file, OFD locks and flocks to a description; a request
// that would wait says so instead of blocking; locks reach other monitors of the database.
#include "monitor/service/file_locks.h"

#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include "monitor/service/scratch_mount_test.h"
#include "schema/filesystem.h"

namespace amino::monitor::service {
namespace {

constexpr pid_t kProcessA = 1001;  // record locks are keyed by the caller's tgid only
constexpr pid_t kProcessB = 1002;

struct flock Range(short type, off_t start, off_t len) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  return fl;
}

class FileLocksTest : public ScratchMountTest {
 protected:
  void TearDown() override {
    ReleaseProcessLocks(kProcessA, nullptr);
    ReleaseProcessLocks(kProcessB, nullptr);
    ScratchMountTest::TearDown();
  }

  // A new open file description of stored file `id`.
  std::shared_ptr<ServedFile> Open(schema::FileId id) {
    auto f = std::make_shared<ServedFile>();
    f->mfs = &mfs_;
    f->id = id;
    f->flags = O_RDWR;
    f->type = S_IFREG;
    return f;
  }

  LockOutcome Set(const std::shared_ptr<ServedFile>& f, pid_t who, int cmd, short type, off_t start,
                  off_t len) {
    struct flock fl = Range(type, start, len);
    return FcntlLock(f, who, cmd, &fl);
  }
};

TEST_F(FileLocksTest, RecordLocksConflictBetweenProcessesNeverWithinOne) {
  auto f = Open(10);
  EXPECT_EQ(Set(f, kProcessA, F_SETLK, F_WRLCK, 0, 100).result, 0);
  EXPECT_EQ(Set(f, kProcessA, F_SETLK, F_WRLCK, 50, 10).result, 0);  // its own: replaced
  EXPECT_EQ(Set(f, kProcessB, F_SETLK, F_RDLCK, 50, 10).result, -EAGAIN);
  EXPECT_EQ(Set(f, kProcessB, F_SETLK, F_WRLCK, 100, 10).result, 0);  // beyond A's range

  const LockOutcome waits = Set(f, kProcessB, F_SETLKW, F_WRLCK, 0, 1);
  EXPECT_EQ(waits.result, 0);
  EXPECT_TRUE(waits.wait);  // the caller parks the tracee; the monitor never blocks

  // F_GETLK names the holding process and its range.
  struct flock probe = Range(F_WRLCK, 20, 5);
  ASSERT_EQ(FcntlLock(f, kProcessB, F_GETLK, &probe).result, 0);
  EXPECT_EQ(probe.l_type, F_WRLCK);
  EXPECT_EQ(probe.l_pid, kProcessA);
  EXPECT_EQ(probe.l_start, 0);
  EXPECT_EQ(probe.l_len, 100);
  probe = Range(F_WRLCK, 20, 5);
  ASSERT_EQ(FcntlLock(f, kProcessA, F_GETLK, &probe).result, 0);
  EXPECT_EQ(probe.l_type, F_UNLCK);  // a process never conflicts with itself
}

TEST_F(FileLocksTest, ClosingAnyDescriptorOfTheFileReleasesTheProcessRecordLocks) {
  auto f = Open(11);
  auto other_description = Open(11);
  auto other_file = Open(12);
  ASSERT_EQ(Set(f, kProcessA, F_SETLK, F_WRLCK, 0, 0).result, 0);
  ASSERT_EQ(Set(other_file, kProcessA, F_SETLK, F_WRLCK, 0, 0).result, 0);

  const uint64_t before = FileLockReleases();
  ReleaseProcessLocks(kProcessA, other_description.get());  // close(2) of another descriptor
  EXPECT_GT(FileLockReleases(), before);                    // waiting requests are retried
  EXPECT_EQ(Set(f, kProcessB, F_SETLK, F_WRLCK, 0, 0).result, 0);
  // The other file's lock is still there, until the process ends.
  EXPECT_EQ(Set(other_file, kProcessB, F_SETLK, F_WRLCK, 0, 0).result, -EAGAIN);
  ReleaseProcessLocks(kProcessA, nullptr);
  EXPECT_EQ(Set(other_file, kProcessB, F_SETLK, F_WRLCK, 0, 0).result, 0);
}

TEST_F(FileLocksTest, UnlockingReleasesAndWakesWaiters) {
  auto f = Open(13);
  ASSERT_EQ(Set(f, kProcessA, F_SETLK, F_WRLCK, 0, 10).result, 0);
  ASSERT_TRUE(Set(f, kProcessB, F_SETLKW, F_WRLCK, 0, 10).wait);
  const uint64_t before = FileLockReleases();
  EXPECT_EQ(Set(f, kProcessA, F_SETLK, F_UNLCK, 0, 10).result, 0);
  EXPECT_GT(FileLockReleases(), before);
  const LockOutcome again = Set(f, kProcessB, F_SETLKW, F_WRLCK, 0, 10);
  EXPECT_EQ(again.result, 0);
  EXPECT_FALSE(again.wait);
  // Unlocking what a process never locked succeeds, as in the kernel.
  EXPECT_EQ(Set(Open(14), kProcessA, F_SETLK, F_UNLCK, 0, 0).result, 0);
}

TEST_F(FileLocksTest, OpenFileDescriptionLocksBelongToTheDescription) {
  auto first = Open(15);
  auto second = Open(15);
  ASSERT_EQ(Set(first, kProcessA, F_OFD_SETLK, F_WRLCK, 0, 10).result, 0);
  // Another description of the same process conflicts: OFD locks are not the process's.
  EXPECT_EQ(Set(second, kProcessA, F_OFD_SETLK, F_WRLCK, 5, 10).result, -EAGAIN);
  EXPECT_TRUE(Set(second, kProcessA, F_OFD_SETLKW, F_WRLCK, 5, 10).wait);
  // And record locks conflict with them.
  EXPECT_EQ(Set(second, kProcessB, F_SETLK, F_RDLCK, 0, 1).result, -EAGAIN);
  struct flock probe = Range(F_RDLCK, 0, 1);
  ASSERT_EQ(FcntlLock(second, kProcessA, F_OFD_GETLK, &probe).result, 0);
  EXPECT_EQ(probe.l_type, F_WRLCK);
  EXPECT_EQ(probe.l_pid, -1);  // an OFD lock has no owning process
  // The kernel's checks apply: l_pid must be 0 for the OFD commands.
  struct flock bad = Range(F_WRLCK, 0, 1);
  bad.l_pid = 7;
  EXPECT_EQ(FcntlLock(second, kProcessA, F_OFD_SETLK, &bad).result, -EINVAL);

  first.reset();  // the last descriptor of the description closed
  EXPECT_EQ(Set(second, kProcessA, F_OFD_SETLK, F_WRLCK, 5, 10).result, 0);
}

TEST_F(FileLocksTest, FlockSharedAndExclusivePerDescription) {
  auto a = Open(16);
  auto b = Open(16);
  auto c = Open(16);
  EXPECT_EQ(FlockLock(a, LOCK_SH).result, 0);
  EXPECT_EQ(FlockLock(b, LOCK_SH | LOCK_NB).result, 0);
  EXPECT_EQ(FlockLock(c, LOCK_EX | LOCK_NB).result, -EWOULDBLOCK);
  const LockOutcome waits = FlockLock(c, LOCK_EX);
  EXPECT_EQ(waits.result, 0);
  EXPECT_TRUE(waits.wait);
  EXPECT_EQ(FlockLock(a, LOCK_UN).result, 0);
  b.reset();  // its flock goes with the description
  EXPECT_EQ(FlockLock(c, LOCK_EX | LOCK_NB).result, 0);
  EXPECT_EQ(FlockLock(a, LOCK_SH | LOCK_NB).result, -EWOULDBLOCK);
  // flock and record locks do not see each other (Linux).
  EXPECT_EQ(Set(a, kProcessA, F_SETLK, F_WRLCK, 0, 0).result, 0);
  EXPECT_EQ(FlockLock(a, 99).result, -EINVAL);
}

TEST_F(FileLocksTest, LocksOfAnotherMonitorOfTheDatabaseConflict) {
  auto f = Open(17);
  // Create the file's lock file, then let a separate process hold a lock on it, as a second
  // `amino run` on the same database would.
  ASSERT_EQ(Set(f, kProcessA, F_SETLK, F_UNLCK, 0, 0).result, 0);
  ASSERT_EQ(FlockLock(f, LOCK_SH).result, 0);
  ASSERT_EQ(FlockLock(f, LOCK_UN).result, 0);
  const std::string lock_file = root_ + "/db/locks/17";
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t other = fork();
  if (other == 0) {
    int fd = open(lock_file.c_str(), O_RDWR);
    struct flock fl = Range(F_WRLCK, 0, 10);
    if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) != 0) _exit(1);
    char c = 'x';
    if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) != 1) _exit(2);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(Set(f, kProcessA, F_SETLK, F_RDLCK, 5, 1).result, -EAGAIN);
  EXPECT_TRUE(Set(f, kProcessA, F_SETLKW, F_RDLCK, 5, 1).wait);
  ASSERT_EQ(write(done[1], "x", 1), 1);
  int status;
  ASSERT_EQ(waitpid(other, &status, 0), other);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Set(f, kProcessA, F_SETLK, F_RDLCK, 5, 1).result, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);
}

}  // namespace
}  // namespace amino::monitor::service
