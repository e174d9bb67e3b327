// The descriptor calls as a handler follows them, on the test's own process as the "tracee":
// the table takes the kernel's new numbers at the exits, a file whose descriptor goes is handed
// to the closing hook (where its record locks go), and a file passed in SCM_RIGHTS is found
// again by its receiver after the sender closed it.
#include "monitor/descriptor_calls.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/close_range.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "monitor/shadow_fds.h"
#include "monitor/shadow_fds_test_support.h"

namespace amino::monitor {
namespace {

SyscallRegs Call(long nr, std::vector<uint64_t> args) {
  SyscallRegs call;
  call.regs.orig_rax = static_cast<unsigned long long>(nr);
  for (size_t i = 0; i < args.size(); ++i) call.set_arg(static_cast<int>(i), args[i]);
  return call;
}

// The kernel returned `result`: the exit as the handler sees it.
bool Exit(DescriptorCalls& d, Thread& t, SyscallRegs call, long result) {
  call.regs.rax = static_cast<unsigned long long>(result);
  return d.OnExit(t, call);
}

class DescriptorCallsTest : public ::testing::Test {
 protected:
  Thread t_ = Self();
  std::map<int, std::shared_ptr<OpenFile>>& files_ = t_.proc->fds->files;
  std::vector<OpenFile*> closed_;
  DescriptorCalls calls_{[this](Thread&, OpenFile& f) { closed_.push_back(&f); }};
};

TEST_F(DescriptorCallsTest, CloseForgetsTheNumberAndHandsTheFileToTheHook) {
  auto a = std::make_shared<Tracked>(1);
  files_[5] = a;
  auto d = calls_.OnEntry(t_, Call(SYS_close, {5}), nullptr);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Decision::Kind::kPass);
  EXPECT_TRUE(files_.empty());
  EXPECT_EQ(closed_, (std::vector<OpenFile*>{a.get()}));
  // A number the table does not hold: the kernel's business only.
  closed_.clear();
  d = calls_.OnEntry(t_, Call(SYS_close, {6}), nullptr);
  EXPECT_EQ(d->kind, Decision::Kind::kPass);
  EXPECT_TRUE(closed_.empty());
}

TEST_F(DescriptorCallsTest, DupTwoOntoATrackedNumberReplacesItAtTheExit) {
  auto a = std::make_shared<Tracked>(1);
  auto b = std::make_shared<Tracked>(2);
  files_[3] = a;
  files_[7] = b;
  const SyscallRegs dup2 = Call(SYS_dup2, {3, 7});
  auto d = calls_.OnEntry(t_, dup2, nullptr);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, Decision::Kind::kObserveExit);
  EXPECT_TRUE(closed_.empty());  // nothing is closed before the kernel has done it
  ASSERT_TRUE(Exit(calls_, t_, dup2, 7));
  EXPECT_EQ(files_[7], a);
  EXPECT_EQ(files_[3], a);
  EXPECT_EQ(closed_, (std::vector<OpenFile*>{b.get()}));
  EXPECT_FALSE(Exit(calls_, t_, dup2, 7));  // nothing pending any more
}

TEST_F(DescriptorCallsTest, AFailedDupChangesNothing) {
  auto a = std::make_shared<Tracked>(1);
  auto b = std::make_shared<Tracked>(2);
  files_[3] = a;
  files_[7] = b;
  const SyscallRegs dup3 = Call(SYS_dup3, {3, 7, O_CLOEXEC});
  ASSERT_EQ(calls_.OnEntry(t_, dup3, nullptr)->kind, Decision::Kind::kObserveExit);
  ASSERT_TRUE(Exit(calls_, t_, dup3, -EBADF));
  EXPECT_EQ(files_[7], b);
  EXPECT_TRUE(closed_.empty());
}

TEST_F(DescriptorCallsTest, DupOfAnUntrackedNumberOntoAnUntrackedOneIsNotFollowed) {
  files_[3] = std::make_shared<Tracked>(1);
  EXPECT_EQ(calls_.OnEntry(t_, Call(SYS_dup2, {4, 9}), nullptr)->kind, Decision::Kind::kPass);
  EXPECT_EQ(calls_.OnEntry(t_, Call(SYS_dup, {4}), nullptr)->kind, Decision::Kind::kPass);
  // A copy of an untracked number onto a tracked one drops the tracked file.
  const SyscallRegs onto = Call(SYS_dup2, {4, 3});
  ASSERT_EQ(calls_.OnEntry(t_, onto, nullptr)->kind, Decision::Kind::kObserveExit);
  ASSERT_TRUE(Exit(calls_, t_, onto, 3));
  EXPECT_FALSE(files_.count(3));
  EXPECT_EQ(closed_.size(), 1u);
}

TEST_F(DescriptorCallsTest, FcntlDupfdIsFollowedItsOtherCommandsAreNot) {
  auto a = std::make_shared<Tracked>(1);
  files_[3] = a;
  const SyscallRegs dupfd = Call(SYS_fcntl, {3, F_DUPFD_CLOEXEC, 10});
  ASSERT_EQ(calls_.OnEntry(t_, dupfd, nullptr)->kind, Decision::Kind::kObserveExit);
  ASSERT_TRUE(Exit(calls_, t_, dupfd, 12));
  EXPECT_EQ(files_[12], a);
  EXPECT_FALSE(calls_.OnEntry(t_, Call(SYS_fcntl, {3, F_SETFD, FD_CLOEXEC}), nullptr));
}

TEST_F(DescriptorCallsTest, CloseRangeClosesAtTheExitOnlyWhenItSucceeded) {
  for (int fd : {3, 4, 8}) files_[fd] = std::make_shared<Tracked>(static_cast<ino_t>(fd));
  const SyscallRegs range = Call(SYS_close_range, {4, 10, 0});
  ASSERT_EQ(calls_.OnEntry(t_, range, nullptr)->kind, Decision::Kind::kObserveExit);
  ASSERT_TRUE(Exit(calls_, t_, range, -EINVAL));
  EXPECT_EQ(files_.size(), 3u);
  ASSERT_EQ(calls_.OnEntry(t_, range, nullptr)->kind, Decision::Kind::kObserveExit);
  ASSERT_TRUE(Exit(calls_, t_, range, 0));
  EXPECT_EQ(files_.size(), 1u);
  EXPECT_EQ(closed_.size(), 2u);
}

TEST_F(DescriptorCallsTest, APassedFileIsFoundByItsReceiverAfterTheSenderClosedIt) {
  const int placeholder = memfd_create("descriptor-calls-test", MFD_CLOEXEC);
  ASSERT_GE(placeholder, 0);
  auto sent = std::make_shared<Tracked>(InodeOfFd(t_.tid, placeholder));
  files_[placeholder] = sent;
  RightsMessage m({placeholder});
  EXPECT_FALSE(calls_.OnEntry(t_, Call(SYS_sendmsg, {9, Address(m.msg()), 0}), nullptr));
  // The sender closes its copy; only the message keeps the file alive.
  std::weak_ptr<OpenFile> alive = sent;
  calls_.OnEntry(t_, Call(SYS_close, {static_cast<uint64_t>(placeholder)}), nullptr);
  sent.reset();
  EXPECT_FALSE(alive.expired());

  // Another process receives it (the message as its recvmsg filled it in).
  Thread receiver = Self();
  const SyscallRegs recv = Call(SYS_recvmsg, {4, Address(m.msg()), 0});
  ASSERT_EQ(calls_.OnEntry(receiver, recv, nullptr)->kind, Decision::Kind::kObserveExit);
  ASSERT_TRUE(Exit(calls_, receiver, recv, 1));
  ASSERT_TRUE(receiver.proc->fds->files.count(placeholder));
  EXPECT_EQ(receiver.proc->fds->files[placeholder], alive.lock());
  close(placeholder);
}

}  // namespace
}  // namespace amino::monitor
