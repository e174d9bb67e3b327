#include "monitor/foreign_abi.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <cstring>

namespace amino::monitor {
namespace {

// i386 numbers (arch/x86/entry/syscalls/syscall_32.tbl).
constexpr long kI386Open = 5, kI386Mmap = 90, kI386Stat64 = 195, kI386Openat = 295,
               kI386FanotifyMark = 339;

bool NoMemory(uint64_t, void*, size_t) { return false; }

user_regs_struct I386(long nr, uint64_t ebx = 0, uint64_t ecx = 0, uint64_t edx = 0,
                      uint64_t esi = 0, uint64_t edi = 0, uint64_t ebp = 0) {
  user_regs_struct r{};
  r.orig_rax = static_cast<unsigned long long>(nr);
  r.rbx = ebx, r.rcx = ecx, r.rdx = edx, r.rsi = esi, r.rdi = edi, r.rbp = ebp;
  r.r8 = r.r9 = r.r10 = 0xdeadbeef;  // not i386 argument registers
  return r;
}

TEST(ForeignAbiTest, I386CallsAreTheirX8664Namesakes) {
  ForeignCall c = DescribeForeign(I386(kI386Open, 0x1000, O_RDONLY), NoMemory);
  EXPECT_EQ(c.abi, ForeignAbi::kI386);
  EXPECT_EQ(c.name, "open");
  EXPECT_EQ(c.native_nr, SYS_open);
  EXPECT_EQ(c.args[0], 0x1000u);
  EXPECT_EQ(c.args[1], static_cast<uint64_t>(O_RDONLY));
}

TEST(ForeignAbiTest, I386OnlyCallsMapToTheCallWithTheSameArguments) {
  ForeignCall c = DescribeForeign(I386(kI386Stat64, 0x2000, 0x3000), NoMemory);
  EXPECT_EQ(c.name, "stat64");
  EXPECT_EQ(c.native_nr, SYS_stat);
  EXPECT_EQ(c.args[0], 0x2000u);
}

TEST(ForeignAbiTest, DescriptorsAreSignExtendedAndOnlyTheLow32BitsCount) {
  // AT_FDCWD in a 32-bit register, with garbage above it that the i386 ABI ignores.
  ForeignCall c = DescribeForeign(
      I386(kI386Openat, 0xabcd0000ffffff9cull, 0xffffffff00004000ull, O_CREAT), NoMemory);
  EXPECT_EQ(c.native_nr, SYS_openat);
  EXPECT_EQ(static_cast<int64_t>(c.args[0]), AT_FDCWD);
  EXPECT_EQ(c.args[1], 0x4000u);  // a pointer: zero-extended
}

TEST(ForeignAbiTest, FanotifyMarkPathComesAfterTheSplitMask) {
  ForeignCall c =
      DescribeForeign(I386(kI386FanotifyMark, 3, 1, 0x10, 0, 0xffffff9c, 0x5000), NoMemory);
  EXPECT_EQ(c.native_nr, SYS_fanotify_mark);
  EXPECT_EQ(static_cast<uint32_t>(c.args[3]), 0xffffff9cu);
  EXPECT_EQ(c.args[4], 0x5000u);
}

TEST(ForeignAbiTest, OldMmapArgumentsAreReadFromMemory) {
  const uint32_t block[6] = {0, 4096, 1, 1, 7, 0};
  auto read = [&](uint64_t addr, void* out, size_t n) {
    if (addr != 0x6000 || n != sizeof block) return false;
    std::memcpy(out, block, n);
    return true;
  };
  ForeignCall c = DescribeForeign(I386(kI386Mmap, 0x6000), read);
  EXPECT_EQ(c.native_nr, SYS_mmap);
  EXPECT_EQ(c.args[1], 4096u);
  EXPECT_EQ(c.args[4], 7u);  // the descriptor
  c = DescribeForeign(I386(kI386Mmap, 0x7000), read);
  EXPECT_EQ(static_cast<int64_t>(c.args[4]), -1);  // unreadable: no descriptor
}

TEST(ForeignAbiTest, X32CallsUseTheX8664Registers) {
  user_regs_struct r{};
  r.orig_rax = 0x40000000ull | SYS_openat;
  r.rdi = 0xffffff9c;
  r.rsi = 0x8000;
  ForeignCall c = DescribeForeign(r, NoMemory);
  EXPECT_EQ(c.abi, ForeignAbi::kX32);
  EXPECT_EQ(c.name, "openat");
  EXPECT_EQ(c.native_nr, SYS_openat);
  EXPECT_EQ(static_cast<int64_t>(c.args[0]), AT_FDCWD);
  EXPECT_EQ(c.args[1], 0x8000u);
}

TEST(ForeignAbiTest, UnknownNumbersHaveNoNativeCall) {
  ForeignCall c = DescribeForeign(I386(100000), NoMemory);
  EXPECT_EQ(c.native_nr, -1);
  EXPECT_EQ(c.name, "syscall_100000");
}

}  // namespace
}  // namespace amino::monitor
