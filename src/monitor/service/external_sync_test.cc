// Which calls the kernel performs may show something outside the traced tree (external_sync.h):
// under `--durability external` each such call waits for the log flush, so a call wrongly taken
// as unobservable would let output run ahead of the commits it depends on.
#include "monitor/service/external_sync.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <initializer_list>

namespace amino::monitor::service {
namespace {

SyscallRegs Call(long nr, std::initializer_list<uint64_t> args = {}) {
  SyscallRegs call;
  call.regs.orig_rax = static_cast<unsigned long long>(nr);
  int i = 0;
  for (uint64_t a : args) call.set_arg(i++, a);
  return call;
}

TEST(ExternalSyncTest, ReadingAndLookingUpShowNothing) {
  for (long nr : {SYS_read, SYS_pread64, SYS_readv, SYS_lseek, SYS_fstat, SYS_newfstatat, SYS_statx,
                  SYS_getdents64, SYS_readlink, SYS_getcwd, SYS_close, SYS_dup2, SYS_getxattr,
                  SYS_execve, SYS_fsync}) {
    EXPECT_FALSE(MayBeObservedOutside(Call(nr))) << "call " << nr;
  }
}

TEST(ExternalSyncTest, OutputAndChangesOfHostStateAreObserved) {
  for (long nr :
       {SYS_write, SYS_pwrite64, SYS_writev, SYS_sendto, SYS_sendmsg, SYS_sendmmsg, SYS_rename,
        SYS_unlink, SYS_mkdir, SYS_chmod, SYS_truncate, SYS_ioctl, SYS_kill, SYS_tgkill,
        SYS_process_vm_writev, SYS_io_uring_enter, SYS_splice, SYS_copy_file_range}) {
    EXPECT_TRUE(MayBeObservedOutside(Call(nr))) << "call " << nr;
  }
  // A call the table does not know is taken as showing something.
  EXPECT_TRUE(MayBeObservedOutside(Call(462)));
  EXPECT_TRUE(MayBeObservedOutside(Call(1000)));
}

TEST(ExternalSyncTest, AnOpenShowsSomethingOnlyWhenItMayCreateOrTruncate) {
  EXPECT_FALSE(MayBeObservedOutside(Call(SYS_openat, {0, 0, O_RDONLY})));
  EXPECT_FALSE(MayBeObservedOutside(Call(SYS_openat, {0, 0, O_RDWR | O_APPEND})));
  EXPECT_TRUE(MayBeObservedOutside(Call(SYS_openat, {0, 0, O_WRONLY | O_CREAT})));
  EXPECT_TRUE(MayBeObservedOutside(Call(SYS_openat, {0, 0, O_WRONLY | O_TRUNC})));
  EXPECT_FALSE(MayBeObservedOutside(Call(SYS_open, {0, O_RDONLY})));
  EXPECT_TRUE(MayBeObservedOutside(Call(SYS_open, {0, O_CREAT | O_EXCL})));
  EXPECT_TRUE(MayBeObservedOutside(Call(SYS_creat, {0, 0644})));
  // openat2's flags are in the tracee's memory: taken as creating.
  EXPECT_TRUE(MayBeObservedOutside(Call(SYS_openat2, {0, 0, 0, 24})));
}

TEST(ExternalSyncTest, LocksAreSeenByOthersOtherDescriptorCommandsAreNot) {
  for (int cmd : {F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE}) {
    EXPECT_TRUE(MayBeObservedOutside(Call(SYS_fcntl, {3, static_cast<uint64_t>(cmd)})))
        << "fcntl " << cmd;
  }
  for (int cmd : {F_GETFL, F_SETFD, F_GETLK, F_DUPFD_CLOEXEC}) {
    EXPECT_FALSE(MayBeObservedOutside(Call(SYS_fcntl, {3, static_cast<uint64_t>(cmd)})))
        << "fcntl " << cmd;
  }
}

TEST(ExternalSyncTest, OnlyASharedWritableMappingOfAFileEscapesFollowing) {
  const uint64_t rw = PROT_READ | PROT_WRITE;
  EXPECT_TRUE(MayBeObservedOutside(Call(SYS_mmap, {0, 4096, rw, MAP_SHARED, 3, 0})));
  EXPECT_TRUE(MayBeObservedOutside(Call(SYS_mmap, {0, 4096, rw, MAP_SHARED_VALIDATE, 3, 0})));
  EXPECT_FALSE(MayBeObservedOutside(Call(SYS_mmap, {0, 4096, PROT_READ, MAP_SHARED, 3, 0})));
  EXPECT_FALSE(MayBeObservedOutside(Call(SYS_mmap, {0, 4096, rw, MAP_PRIVATE, 3, 0})));
  EXPECT_FALSE(MayBeObservedOutside(
      Call(SYS_mmap, {0, 4096, rw, MAP_SHARED | MAP_ANONYMOUS, static_cast<uint64_t>(-1), 0})));
}

TEST(ExternalSyncTest, EveryCallTrappedForOutputIsTakenAsOutput) {
  const std::vector<long> calls = OutputCalls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), SYS_sendto), calls.end());
  EXPECT_NE(std::find(calls.begin(), calls.end(), SYS_kill), calls.end());
  EXPECT_NE(std::find(calls.begin(), calls.end(), SYS_io_uring_enter), calls.end());
  for (long nr : calls) EXPECT_TRUE(MayBeObservedOutside(Call(nr))) << "call " << nr;
}

}  // namespace
}  // namespace amino::monitor::service
