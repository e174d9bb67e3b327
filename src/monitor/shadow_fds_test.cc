// The shared bookkeeping of shadow descriptors, on the test's own process as the "tracee"
// (its memory and /proc entries are as readable as a traced process's): descriptors passed in
// SCM_RIGHTS, close_range, inode lookup, and the adoption of received placeholders.
#include "monitor/shadow_fds.h"

#include <gtest/gtest.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "monitor/shadow_fds_test_support.h"

namespace amino::monitor {
namespace {

TEST(ShadowFdsTest, PassedFdsReadsEveryScmRightsDescriptor) {
  Thread t = Self();
  RightsMessage m({7, 9, 11});
  EXPECT_EQ(PassedFds(*t.proc, Address(m.msg())), (std::vector<int>{7, 9, 11}));
}

TEST(ShadowFdsTest, PassedFdsIgnoresMessagesTheKernelWouldRefuse) {
  Thread t = Self();
  msghdr none{};
  EXPECT_TRUE(PassedFds(*t.proc, Address(&none)).empty());  // no control data
  RightsMessage m({3});
  m.msg()->msg_controllen = 1 << 20;  // larger than any the kernel takes
  EXPECT_TRUE(PassedFds(*t.proc, Address(m.msg())).empty());
  RightsMessage bad({3});
  CMSG_FIRSTHDR(bad.msg())->cmsg_len = 4096;  // runs past the control buffer
  EXPECT_TRUE(PassedFds(*t.proc, Address(bad.msg())).empty());
  EXPECT_TRUE(PassedFds(*t.proc, 0).empty());  // unreadable address
}

TEST(ShadowFdsTest, InodeOfFdIsTheOpenFilesInode) {
  const int fd = memfd_create("shadow-fds-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  EXPECT_EQ(InodeOfFd(tid, fd), st.st_ino);
  close(fd);
  EXPECT_EQ(InodeOfFd(tid, fd), 0u);  // not open
}

SyscallRegs CloseRange(unsigned first, unsigned last, unsigned flags) {
  SyscallRegs call;
  call.regs.orig_rax = SYS_close_range;
  call.set_arg(0, first);
  call.set_arg(1, last);
  call.set_arg(2, flags);
  return call;
}

TEST(ShadowFdsTest, CloseRangeForgetsTheClosedDescriptorsOnly) {
  Thread t = Self();
  auto& files = t.proc->fds->files;
  for (int fd : {3, 4, 8, 9}) files[fd] = std::make_shared<Tracked>(fd);
  std::vector<ino_t> closed;
  auto note = [&](OpenFile& f) { closed.push_back(static_cast<Tracked&>(f).placeholder_ino); };
  ApplyCloseRange(t, CloseRange(4, 8, 0), note);
  EXPECT_EQ(closed, (std::vector<ino_t>{4, 8}));
  EXPECT_EQ(files.size(), 2u);
  EXPECT_TRUE(files.count(3) && files.count(9));
  // CLOEXEC closes nothing now (the exec does).
  closed.clear();
  ApplyCloseRange(t, CloseRange(0, ~0u, CLOSE_RANGE_CLOEXEC), note);
  EXPECT_TRUE(closed.empty());
  EXPECT_EQ(files.size(), 2u);
}

TEST(ShadowFdsTest, CloseRangeUnshareLeavesTheOtherProcessesTable) {
  Thread t = Self();
  t.proc->fds->files[5] = std::make_shared<Tracked>(5);
  std::shared_ptr<FdTable> shared = t.proc->fds;  // as a CLONE_FILES sibling holds it
  ApplyCloseRange(t, CloseRange(0, ~0u, CLOSE_RANGE_UNSHARE), [](OpenFile&) {});
  EXPECT_NE(t.proc->fds, shared);
  EXPECT_TRUE(t.proc->fds->files.empty());
  EXPECT_EQ(shared->files.size(), 1u);
}

TEST(ShadowFdsTest, ReceivedPlaceholdersEnterTheReceiversTable) {
  Thread t = Self();
  // Two placeholders: one in flight from a sender, one known only by its inode; and a plain
  // descriptor the monitor knows nothing about.
  const int in_flight_fd = memfd_create("in-flight", MFD_CLOEXEC);
  const int known_fd = memfd_create("known", MFD_CLOEXEC);
  const int plain_fd = memfd_create("plain", MFD_CLOEXEC);
  ASSERT_GE(in_flight_fd, 0);
  ASSERT_GE(known_fd, 0);
  ASSERT_GE(plain_fd, 0);
  const ino_t in_flight_ino = InodeOfFd(t.tid, in_flight_fd);
  const ino_t known_ino = InodeOfFd(t.tid, known_fd);
  auto sent = std::make_shared<Tracked>(in_flight_ino);
  auto known = std::make_shared<Tracked>(known_ino);
  std::unordered_multimap<ino_t, std::shared_ptr<Tracked>> in_flight{{in_flight_ino, sent}};
  std::unordered_map<ino_t, std::weak_ptr<Tracked>> by_ino{{known_ino, known}};

  // What recvmsg returned: the message as the receiver sees it, its descriptors installed.
  RightsMessage m({in_flight_fd, known_fd, plain_fd});
  SyscallRegs recvmsg;
  recvmsg.regs.orig_rax = SYS_recvmsg;
  recvmsg.set_arg(1, Address(m.msg()));
  AdoptReceived(t, recvmsg, in_flight, by_ino);

  auto& files = t.proc->fds->files;
  EXPECT_EQ(files.size(), 2u);
  EXPECT_EQ(files[in_flight_fd], sent);
  EXPECT_EQ(files[known_fd], known);
  EXPECT_FALSE(files.count(plain_fd));
  EXPECT_TRUE(in_flight.empty());  // taken by this receiver, not by the next
  for (int fd : {in_flight_fd, known_fd, plain_fd}) close(fd);
}

}  // namespace
}  // namespace amino::monitor
