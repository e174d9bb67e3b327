// iovec arrays as the kernel imports them (tracee_iovecs.h), read from this test's own memory,
// against the real kernel's readv on a pipe for the same arrays.
#include "monitor/tracee_iovecs.h"

#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace amino::monitor {
namespace {

Process Self() {
  Process p;
  p.tgid = getpid();
  return p;
}

uint64_t Address(const void* p) { return reinterpret_cast<uint64_t>(p); }

// What the kernel's readv says of the same array: 0 when it accepts it, else -errno. A pipe
// with one byte in it, so that an accepted array reads at once.
long KernelReadv(const iovec* iov, long count) {
  int ends[2];
  if (pipe(ends) != 0) return -1000;
  if (write(ends[1], "x", 1) != 1) return -1000;
  const ssize_t n = readv(ends[0], iov, static_cast<int>(count));
  const long out = n < 0 ? -errno : 0;
  close(ends[0]);
  close(ends[1]);
  return out;
}

TEST(TraceeIovecsTest, AGoodArrayIsReadWithItsTotal) {
  char a[10], b[20];
  iovec iov[2] = {{a, sizeof a}, {b, sizeof b}};
  Process p = Self();
  std::vector<iovec> out;
  size_t total = 0;
  ASSERT_EQ(ImportIovecs(p, Address(iov), 2, &out, &total), 0);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].iov_base, a);
  EXPECT_EQ(out[1].iov_len, sizeof b);
  EXPECT_EQ(total, 30u);
  EXPECT_EQ(KernelReadv(iov, 2), 0);
}

TEST(TraceeIovecsTest, BadArraysFailWithTheKernelsErrno) {
  Process p = Self();
  std::vector<iovec> out;
  size_t total = 0;
  char a[8];
  // More entries than UIO_MAXIOV.
  std::vector<iovec> many(IOV_MAX + 1, iovec{a, 1});
  EXPECT_EQ(ImportIovecs(p, Address(many.data()), many.size(), &out, &total), -EINVAL);
  EXPECT_EQ(KernelReadv(many.data(), static_cast<long>(many.size())), -EINVAL);
  // A length that is negative as a ssize_t.
  iovec negative[1] = {{a, static_cast<size_t>(-1)}};
  EXPECT_EQ(ImportIovecs(p, Address(negative), 1, &out, &total), -EINVAL);
  EXPECT_EQ(KernelReadv(negative, 1), -EINVAL);
  // A segment beyond user space.
  iovec kernel_space[1] = {{reinterpret_cast<void*>(0xffff888000000000ULL), 8}};
  EXPECT_EQ(ImportIovecs(p, Address(kernel_space), 1, &out, &total), -EFAULT);
  EXPECT_EQ(KernelReadv(kernel_space, 1), -EFAULT);
  // The array itself unreadable.
  EXPECT_EQ(ImportIovecs(p, 8, 1, &out, &total), -EFAULT);
  EXPECT_EQ(KernelReadv(reinterpret_cast<const iovec*>(8), 1), -EFAULT);
}

TEST(TraceeIovecsTest, LengthsAreCutToOneTransfersCap) {
  Process p = Self();
  static char big[16];
  // Lengths the kernel accepts (below SSIZE_MAX) but whose sum exceeds MAX_RW_COUNT.
  iovec iov[3] = {{big, kMaxRwCount - 10}, {big, 100}, {big, 5}};
  std::vector<iovec> out;
  size_t total = 0;
  ASSERT_EQ(ImportIovecs(p, Address(iov), 3, &out, &total), 0);
  EXPECT_EQ(total, kMaxRwCount);
  EXPECT_EQ(out[0].iov_len, kMaxRwCount - 10);
  EXPECT_EQ(out[1].iov_len, 10u);
  EXPECT_EQ(out[2].iov_len, 0u);
}

}  // namespace
}  // namespace amino::monitor
